"""The runtime module: the only part of tflint that imports TensorFlow, lazily, and only in child processes
that run user code with a time limit."""
