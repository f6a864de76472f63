"""An image-classification input pipeline with the mistakes tflint is built to find."""
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

IMAGE_SIZE = 224
BATCH_SIZE = 64


def load_arrays():
    images = np.random.rand(1024, 32, 32, 3).astype("float32")
    labels = np.random.randint(0, 10, size=(1024,))
    return images, labels


def generator():
    images, labels = load_arrays()
    for i in range(len(images)):
        yield images[i], labels[i]


def normalize(image, label):
    return tf.cast(image, tf.float32) / 255.0, label


def augment(image, label):
    image = tf.image.random_flip_left_right(image)
    return image, label


def parse_record(record):
    features = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    example = tf.io.parse_single_example(record, features)
    image = tf.io.decode_jpeg(example["image"], channels=3)
    return tf.image.resize(image, [IMAGE_SIZE, IMAGE_SIZE]), example["label"]


def from_generator():
    ds = tf.data.Dataset.from_generator(
        generator,
        output_signature=(
            tf.TensorSpec(shape=(32, 32, 3), dtype=tf.float32),
            tf.TensorSpec(shape=(), dtype=tf.int64),
        ),
    )
    ds = ds.map(normalize)
    ds = ds.batch(BATCH_SIZE)
    return ds


def from_tfrecords(pattern):
    files = tf.io.gfile.glob(pattern)
    ds = tf.data.TFRecordDataset(files)
    ds = ds.map(parse_record)
    ds = ds.map(augment).cache()
    ds = ds.shuffle(1000).batch(BATCH_SIZE)
    return ds


def from_tfds():
    train = tfds.load("cifar10", split="train", as_supervised=True)
    return train.map(normalize).batch(BATCH_SIZE).prefetch(tf.data.AUTOTUNE).repeat()


model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])
model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(from_generator(), epochs=2)
model.fit(from_tfrecords("data/train-*.tfrecord"), epochs=2)
model.fit(from_tfds(), epochs=2, steps_per_epoch=100)
