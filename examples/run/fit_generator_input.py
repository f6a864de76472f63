"""Train a small text classifier with `model.fit`, fed by a Python generator that featurizes each document.

The generator hashes every document's character trigrams into a bag-of-trigrams vector, one document at a
time, in Python: each batch waits for 64 documents to be featurized under the GIL while the model's step
takes a millisecond. `tflint run` reports the `fit` as input-bound (TFL809) and names `from_generator()` as
the stage that limits it. The fixed version is fit_generator_input_fixed.py.

    tflint run examples/run/fit_generator_input.py
"""
import zlib

import keras
import numpy as np
import tensorflow as tf

BUCKETS = 1024
CLASSES = 4
DOCUMENTS = 1024
BATCH_SIZE = 64

keras.utils.set_random_seed(0)  # the same weights and results on every run


def make_corpus(n, seed=0):
    """Synthetic documents: each class draws its words mostly from its own part of the vocabulary."""
    rng = np.random.default_rng(seed)
    vocab = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), size=rng.integers(3, 9))) for _ in range(2000)]
    docs, labels = [], []
    for i in range(n):
        label = i % CLASSES
        own = rng.integers(label * 500, (label + 1) * 500, size=120)
        noise = rng.integers(0, len(vocab), size=60)
        docs.append(" ".join(vocab[j] for j in np.concatenate([own, noise])))
        labels.append(label)
    return docs, np.array(labels, np.int32)


def trigram_features(text):
    """A normalized bag of hashed character trigrams (the fastText trick)."""
    vec = np.zeros(BUCKETS, np.float32)
    for word in text.split():
        word = f"<{word}>"
        for i in range(len(word) - 2):
            vec[zlib.crc32(word[i:i + 3].encode()) % BUCKETS] += 1.0
    return vec / vec.sum()


def examples(docs, labels):
    for text, label in zip(docs, labels):
        yield trigram_features(text), label


docs, labels = make_corpus(DOCUMENTS)
train = tf.data.Dataset.from_generator(
    lambda: examples(docs, labels),
    output_signature=(tf.TensorSpec([BUCKETS], tf.float32), tf.TensorSpec([], tf.int32)),
)
train = train.batch(BATCH_SIZE)

model = keras.Sequential([
    keras.Input((BUCKETS,)),
    keras.layers.Dense(64, activation="relu"),
    keras.layers.Dense(CLASSES),
])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
history = model.fit(train, epochs=3, verbose=0)
print(f"accuracy after {len(history.history['loss'])} epochs: {history.history['accuracy'][-1]:.3f}")
