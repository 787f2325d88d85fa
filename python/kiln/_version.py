# The single source of Kiln's version: pyproject.toml (scikit-build-core's regex provider) and
# CMakeLists.txt both read this line.
__version__ = "0.1.0"
