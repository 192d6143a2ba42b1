# The program from the report in which Keras 2.0.9's multi_gpu_model made 4 GPUs slower than
# 1 (25 s vs 50 s), with only its imports changed to tandem's (and print as a function).
# MNIST is not on this machine, so Fashion-MNIST (same shapes) stands in for it.
#
#   python examples/report_program.py [GPUS [EPOCHS]]   # GPUS 1: the plain model (default 2)
import sys

from tandem.keras.datasets import fashion_mnist as mnist
from tandem.keras.layers import Input, Dense, merge
from tandem.keras.layers.core import Lambda
from tandem.keras.models import Model
from tandem.keras.utils import to_categorical
from tandem.keras.utils.training_utils import multi_gpu_model
import time

gpus = int(sys.argv[1]) if len(sys.argv) > 1 else 2
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 5

(x_train, y_train), (x_test, y_test) = mnist.load_data()
x_train = x_train.reshape(60000, 784)
x_test = x_test.reshape(10000, 784)
y_train = to_categorical(y_train)
y_test = to_categorical(y_test)

inputs = Input(shape=(784,))

x = Dense(4096, activation='relu')(inputs)
x = Dense(2048, activation='relu')(x)
x = Dense(512, activation='relu')(x)
x = Dense(64, activation='relu')(x)
predictions = Dense(10, activation='softmax')(x)
model = Model(inputs=inputs, outputs=predictions)

if gpus > 1:
    m_model = multi_gpu_model(model, gpus)
    m_model.compile(optimizer='rmsprop',
                    loss='categorical_crossentropy',
                    metrics=['accuracy'])
    m_model.summary()
    a = time.time()
    m_model.fit(x_train, y_train, batch_size=128, epochs=epochs)
    print("fit:", time.time() - a)
    a = time.time()
    m_model.predict(x=x_test, batch_size=128)
    print("predict:", time.time() - a)
else:
    model.compile(optimizer='rmsprop',
                  loss='categorical_crossentropy',
                  metrics=['accuracy'])
    model.summary()
    a = time.time()
    model.fit(x_train, y_train, batch_size=128, epochs=epochs)
    print("fit:", time.time() - a)
    a = time.time()
    model.predict(x=x_test, batch_size=128)
    print("predict:", time.time() - a)
