"""custom_loop_retrace.py, fixed: the warm-up reads the optimizer's own step counter (a variable) inside the
step, so the step traces once; and the loss is averaged in a `keras.metrics.Mean` inside the step and read
once per epoch.

    tflint run examples/run/custom_loop_retrace_fixed.py
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
mean_loss = keras.metrics.Mean()


@tf.function
def train_step(x, y):
    step = tf.cast(optimizer.iterations + 1, tf.float32)
    warmup = tf.minimum(1.0, step / WARMUP_STEPS)  # linear warm-up of the learning rate
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients([(g * warmup, v) for g, v in zip(grads, model.trainable_variables)])
    mean_loss.update_state(loss)


for epoch in range(EPOCHS):
    mean_loss.reset_state()
    for x, y in train:
        train_step(x, y)
    print(f"epoch {epoch + 1}: mean loss {float(mean_loss.result()):.4f}")
