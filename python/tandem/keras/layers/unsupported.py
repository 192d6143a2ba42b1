"""Keras layers tandem does not have yet: importable, so a program that imports them loads;
constructing one raises NotImplementedError naming the layer."""
from .._names import not_implemented

_NAMES = [
    "Conv1D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
    "SeparableConv1D", "SeparableConv2D", "DepthwiseConv1D", "DepthwiseConv2D", "MaxPooling1D",
    "MaxPooling3D", "AveragePooling1D", "AveragePooling3D", "GlobalAveragePooling1D",
    "GlobalMaxPooling1D", "GlobalMaxPooling2D", "LayerNormalization",
    "GroupNormalization", "UnitNormalization", "Normalization", "Rescaling", "Resizing",
    "CenterCrop", "Embedding", "LSTM", "GRU", "SimpleRNN", "RNN", "Bidirectional",
    "TimeDistributed", "ConvLSTM2D", "Permute", "RepeatVector", "Cropping1D", "Cropping2D",
    "ZeroPadding1D", "UpSampling1D", "UpSampling2D", "Multiply", "Subtract", "Average",
    "Maximum", "Minimum", "Dot", "ReLU", "LeakyReLU", "PReLU", "ELU", "Softmax",
    "ThresholdedReLU", "GaussianNoise", "GaussianDropout", "AlphaDropout", "SpatialDropout1D",
    "SpatialDropout2D", "ActivityRegularization", "Masking", "MultiHeadAttention", "Attention",
    "AdditiveAttention", "Identity", "TFSMLayer", "TorchModuleWrapper", "EinsumDense",
]


def _unsupported(name):
    def __init__(self, *args, **kwargs):
        raise not_implemented(f"layer {name}", "tandem's layers are Input, Dense, Activation, "
                              "Dropout, Flatten, Reshape, Add, Concatenate, Conv2D, "
                              "MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, "
                              "ZeroPadding2D and BatchNormalization")
    return type(name, (), {"__init__": __init__, "__doc__": f"Not in tandem yet: {name}."})


for _name in _NAMES:
    globals()[_name] = _unsupported(_name)

__all__ = list(_NAMES)
