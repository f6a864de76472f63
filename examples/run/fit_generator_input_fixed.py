"""fit_generator_input.py, fixed: the documents are featurized once, before training, and the pipeline is
built from the resulting arrays (shuffled, batched, prefetched), so `fit` no longer waits for Python.

    tflint run examples/run/fit_generator_input_fixed.py
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


docs, labels = make_corpus(DOCUMENTS)
features = np.stack([trigram_features(text) for text in docs])  # once, not once per epoch
train = tf.data.Dataset.from_tensor_slices((features, labels))
train = train.shuffle(DOCUMENTS, seed=0).batch(BATCH_SIZE).prefetch(tf.data.AUTOTUNE)

model = keras.Sequential([
    keras.Input((BUCKETS,)),
    keras.layers.Dense(64, activation="relu"),
    keras.layers.Dense(CLASSES),
])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
history = model.fit(train, epochs=3, verbose=0)
print(f"accuracy after {len(history.history['loss'])} epochs: {history.history['accuracy'][-1]:.3f}")
