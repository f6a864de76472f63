"""tflint: a static and runtime performance linter for TensorFlow code."""
__version__ = "0.1.0"
