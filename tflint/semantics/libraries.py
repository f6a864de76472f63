"""Library names the project analysis asks nothing of: the standard library, well-known third-party packages, and
those that never stand for TensorFlow (shared by tflint.semantics.summary and tflint.semantics.names)."""
from __future__ import annotations

import sys

STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {
    "os", "sys", "re", "json", "math", "time", "random", "collections", "functools", "itertools", "typing",
    "pathlib", "logging", "argparse", "pickle", "glob", "shutil", "subprocess", "copy", "io", "abc", "enum",
    "dataclasses", "datetime", "warnings", "contextlib", "string", "struct", "threading", "multiprocessing",
}
THIRD_PARTY = frozenset({
    "numpy", "pandas", "scipy", "sklearn", "matplotlib", "seaborn", "PIL", "cv2", "torch", "torchvision", "jax",
    "flax", "optax", "absl", "tqdm", "six", "h5py", "yaml", "requests", "IPython", "google", "gin", "tensorboard",
    "tensorflow_hub", "tensorflow_text", "tensorflow_probability", "transformers", "datasets", "wandb", "mlflow",
    "skimage", "imageio", "librosa", "nltk", "spacy", "sentencepiece", "tokenizers", "boto3", "psutil", "ml_collections",
})

# libraries that never stand for TensorFlow: their names are not asked about as project aliases
NEVER_TF = frozenset({
    "numpy", "pandas", "scipy", "sklearn", "matplotlib", "seaborn", "PIL", "cv2", "torch", "torchvision", "jax",
    "flax", "optax", "absl", "tqdm", "six", "h5py", "yaml", "requests", "IPython", "skimage", "imageio", "librosa",
    "nltk", "spacy", "boto3", "psutil",
})
