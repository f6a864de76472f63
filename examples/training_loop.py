"""A custom training loop with tracing and eager-mode mistakes."""
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam(1e-3)
loss_fn = tf.keras.losses.MeanSquaredError()


def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


@tf.function
def scaled_loss(x, scale):
    if tf.reduce_sum(x) > 0:
        y = x * scale
    else:
        y = -x * scale
    print("tracing scaled_loss")
    return tf.reduce_mean(y)


@tf.function(experimental_relax_shapes=True)
def distance(x):
    return tf.math.sqrt(x ** 2 + x ** 2)


def eager_distance(x):
    return tf.math.sqrt(x ** 2 + x ** 2) + tf.math.sqrt(x ** 2 + x ** 2)


dataset = tf.data.Dataset.from_tensor_slices((tf.random.normal([256, 8]), tf.random.normal([256, 1]))).batch(32)
for epoch in range(3):
    for x, y in dataset:
        train_step(x, y)
    for step in range(10):
        scaled_loss(tf.ones([4]), step)

predictions = []
for x, _ in dataset:
    predictions.append(model.predict(x))

acc = tf.zeros([0, 1])
for x, _ in dataset:
    acc = tf.concat([acc, model(x)], axis=0)

log_p = tf.math.log(1 + tf.nn.softmax(acc))
