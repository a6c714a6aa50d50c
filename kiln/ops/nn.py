"""Neural-network primitives: convolution and pooling (NCHW activations, OIHW weights)."""
