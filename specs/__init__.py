"""The decode-attention problem, defined once: axes, layouts, inputs, the float64 oracle,
the tolerance rule and the named workloads. No kernel, no timing."""
