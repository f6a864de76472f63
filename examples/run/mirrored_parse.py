"""Training under `tf.distribute.MirroredStrategy` on TFRecords, with a custom loop (the tutorial's shape).

Each record holds 40 numeric features and a label. The pipeline parses them one record at a time
(`tf.io.parse_single_example` mapped before `batch`) on one thread, and the distributed loop waits for it:
`tflint run` reports the loop as input-bound (TFL809) and names the per-example parse as the likely limit.
The fixed version is mirrored_parse_fixed.py. The records are written to a temporary folder and removed after.

    tflint run examples/run/mirrored_parse.py
"""
import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

FEATURES = 40
CLASSES = 4
RECORDS_PER_SHARD = 4096
SHARDS = 4
GLOBAL_BATCH_SIZE = 1024
EPOCHS = 2

keras.utils.set_random_seed(0)  # the same weights and results on every run


def write_shards(folder, seed=0):
    rng = np.random.default_rng(seed)
    weights = rng.normal(size=(FEATURES, CLASSES))
    paths = []
    for shard in range(SHARDS):
        path = os.path.join(folder, f"train-{shard:05d}-of-{SHARDS:05d}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            x = rng.normal(size=(RECORDS_PER_SHARD, FEATURES)).astype("float32")
            y = np.argmax(x @ weights, axis=1)
            for row, label in zip(x, y):
                feature = {"features": tf.train.Feature(float_list=tf.train.FloatList(value=row)),
                           "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))}
                writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
        paths.append(path)
    return paths


SPEC = {"features": tf.io.FixedLenFeature([FEATURES], tf.float32), "label": tf.io.FixedLenFeature([], tf.int64)}


def parse(record):
    example = tf.io.parse_single_example(record, SPEC)
    return example["features"], example["label"]


strategy = tf.distribute.MirroredStrategy()
with strategy.scope():
    model = keras.Sequential([
        keras.Input((FEATURES,)),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(CLASSES),
    ])
    optimizer = keras.optimizers.Adam(1e-3)
loss_object = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")


def train_step(inputs):
    x, y = inputs
    with tf.GradientTape() as tape:
        per_example = loss_object(y, model(x, training=True))
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH_SIZE)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


@tf.function
def distributed_train_step(inputs):
    per_replica = strategy.run(train_step, args=(inputs,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)


with tempfile.TemporaryDirectory() as folder:
    files = write_shards(folder)
    dataset = tf.data.TFRecordDataset(files)
    dataset = dataset.shuffle(4096, seed=0)
    dataset = dataset.map(parse)
    dataset = dataset.batch(GLOBAL_BATCH_SIZE).prefetch(tf.data.AUTOTUNE)
    dist_dataset = strategy.experimental_distribute_dataset(dataset)
    for epoch in range(EPOCHS):
        total, batches = 0.0, 0
        for batch in dist_dataset:
            total += distributed_train_step(batch)
            batches += 1
        print(f"epoch {epoch + 1}: loss {float(total / batches):.4f}")
