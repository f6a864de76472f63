"""A custom training loop with a learning-rate warm-up, written the way it often is at first.

Two problems `tflint run` names: the step gets the global step as a Python int, so `tf.function` traces the
step again for every new value (TFL801, at the `def`); and the loop reads the loss back to Python every step
to log it (TFL810, at the `.numpy()`): on a GPU each read stalls the device until the step is done. The fixed
version is custom_loop_retrace_fixed.py.

    tflint run examples/run/custom_loop_retrace.py
"""
import keras
import numpy as np
import tensorflow as tf

EPOCHS = 2
BATCH_SIZE = 128
WARMUP_STEPS = 20
BASE_LEARNING_RATE = 0.01

keras.utils.set_random_seed(0)  # the same weights and results on every run

rng = np.random.default_rng(0)
features = rng.normal(size=(2048, 20)).astype("float32")
targets = (features @ rng.normal(size=(20, 1)) + 0.1 * rng.normal(size=(2048, 1))).astype("float32")
train = tf.data.Dataset.from_tensor_slices((features, targets))
train = train.shuffle(2048, seed=0).batch(BATCH_SIZE).prefetch(tf.data.AUTOTUNE)

model = keras.Sequential([
    keras.Input((20,)),
    keras.layers.Dense(512, activation="relu"),
    keras.layers.Dense(512, activation="relu"),
    keras.layers.Dense(1),
])
optimizer = keras.optimizers.SGD(learning_rate=BASE_LEARNING_RATE)
loss_fn = keras.losses.MeanSquaredError()


@tf.function
def train_step(x, y, step):
    warmup = min(1.0, (step + 1) / WARMUP_STEPS)  # linear warm-up of the learning rate
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients([(g * warmup, v) for g, v in zip(grads, model.trainable_variables)])
    return loss


step = 0
for epoch in range(EPOCHS):
    losses = []
    for x, y in train:
        loss = train_step(x, y, step)
        losses.append(loss.numpy())
        step += 1
    print(f"epoch {epoch + 1}: mean loss {np.mean(losses):.4f}")
