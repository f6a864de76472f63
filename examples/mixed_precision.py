"""Mixed precision with the Keras 2 loss-scale API that Keras 3 removed."""
import tensorflow as tf
from tensorflow import keras

keras.mixed_precision.set_global_policy("mixed_float16")

inputs = keras.Input(shape=(784,))
x = keras.layers.Dense(256, activation="relu")(inputs)
outputs = keras.layers.Dense(10, activation="softmax")(x)
model = keras.Model(inputs, outputs)

optimizer = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.Adam())


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = keras.losses.sparse_categorical_crossentropy(y, model(x))
        scaled = optimizer.get_scaled_loss(loss)
    scaled_grads = tape.gradient(scaled, model.trainable_variables)
    grads = optimizer.get_unscaled_gradients(scaled_grads)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
