#!/usr/bin/env python3
"""Re-load the golden JSON files and replay them in plain numpy (no TensorFlow).

    python3 scripts/golden/check_golden.py [--dtype float64|float32] [files...]

For every file it rebuilds the MLP from "initial_weights", runs the same
STEPS batches (rows [i*B, min((i+1)*B, N))), computes each batch loss by hand,
back-propagates by hand and applies the optimizer update exactly as written in
scripts/golden/README.md (i.e. as Keras 3 does it).  It then checks:

  * step_losses   : relative error <= 1e-5  (the contract the brief asks for)
  * final_weights : |diff| <= 1e-5 + 1e-4 * |ref|
  * predict       : |diff| <= 1e-5 + 1e-4 * |ref|

and prints the worst errors seen.  Exit code 0 iff every check passes.
Needs only numpy.
"""

import argparse
import glob
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "tests", "golden", "data"))
EPS_CLIP = 1e-7  # keras.backend.epsilon()

LOSS_RTOL = 1e-5
W_ATOL, W_RTOL = 1e-5, 1e-4


# ---------------------------------------------------------------- forward/backward
def act_forward(name, z):
    if name == "relu":
        return np.maximum(z, 0)
    if name == "tanh":
        return np.tanh(z)
    if name == "sigmoid":
        return 1 / (1 + np.exp(-z))
    if name == "linear":
        return z
    if name == "softmax":
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    raise ValueError(name)


def act_backward(name, z, a, da):
    """dL/dz given dL/da for element-wise activations (softmax is fused in the loss)."""
    if name == "relu":
        return da * (z > 0)  # TF ReluGrad: 0 at z == 0
    if name == "tanh":
        return da * (1 - a * a)
    if name == "sigmoid":
        return da * a * (1 - a)
    if name == "linear":
        return da
    raise ValueError(name)


def loss_and_dlogits(loss, last_act, z, a, y):
    """Batch loss (sum_over_batch_size) and its gradient wrt the last pre-activation z.

    Keras 3 sends a softmax / sigmoid output through the *logits* path (the
    activation caches its input in `_keras_logits`), so no clipping happens there.
    """
    b = z.shape[0]
    if loss in ("categorical_crossentropy", "sparse_categorical_crossentropy"):
        assert last_act == "softmax"
        if loss == "sparse_categorical_crossentropy":
            y = np.eye(z.shape[1], dtype=z.dtype)[np.asarray(y, dtype=np.int64)]
        zs = z - z.max(axis=-1, keepdims=True)
        logp = zs - np.log(np.exp(zs).sum(axis=-1, keepdims=True))
        per = -(y * logp).sum(axis=-1)
        return per.sum() / b, (a - y) / b
    if loss == "binary_crossentropy":
        assert last_act == "sigmoid"
        # tf.nn.sigmoid_cross_entropy_with_logits, then mean over the last axis
        per = np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))
        k = z.shape[1]
        return per.mean(axis=-1).sum() / b, (a - y) / (b * k)
    if loss == "mean_squared_error":
        assert last_act == "linear"
        k = z.shape[1]
        per = ((y - a) ** 2).mean(axis=-1)
        return per.sum() / b, 2 * (a - y) / (b * k)
    raise ValueError(loss)


class MLP:
    def __init__(self, spec, dtype):
        self.layers = spec["layers"]
        self.dtype = dtype
        w = [np.asarray(e["values"], dtype=dtype).reshape(e["shape"]) for e in spec["initial_weights"]]
        self.params = []  # flat list in get_weights() order
        it = iter(w)
        for layer in self.layers:
            kernel = next(it)
            bias = next(it) if layer["use_bias"] else None
            self.params.append(kernel)
            if bias is not None:
                self.params.append(bias)

    def _split(self):
        out, i = [], 0
        for layer in self.layers:
            k = self.params[i]; i += 1
            bias = None
            if layer["use_bias"]:
                bias = self.params[i]; i += 1
            out.append((k, bias))
        return out

    def forward(self, x):
        cache, h = [], x
        for layer, (k, bias) in zip(self.layers, self._split()):
            z = h @ k
            if bias is not None:
                z = z + bias
            a = act_forward(layer["activation"], z)
            cache.append((h, z, a))
            h = a
        return h, cache

    def loss_and_grads(self, x, y, loss):
        _, cache = self.forward(x)
        h, z, a = cache[-1]
        value, dz = loss_and_dlogits(loss, self.layers[-1]["activation"], z, a, y)
        grads_rev = []
        for li in range(len(self.layers) - 1, -1, -1):
            h, z, a = cache[li]
            if li != len(self.layers) - 1:
                dz = act_backward(self.layers[li]["activation"], z, a, da)
            k, bias = self._split()[li]
            g = [h.T @ dz]
            if bias is not None:
                g.append(dz.sum(axis=0))
            grads_rev.append(g)
            da = dz @ k.T
        grads = [g for layer_g in reversed(grads_rev) for g in layer_g]
        return value, grads


# ---------------------------------------------------------------- optimizers
class Optimizer:
    """Keras 3.x update rules (keras/src/optimizers/{sgd,rmsprop,adam}.py, update_step)."""

    def __init__(self, cfg, params, dtype):
        self.c = cfg
        self.t = 0  # optimizer.iterations
        self.dtype = dtype
        zeros = lambda: [np.zeros_like(p) for p in params]  # accumulators start at 0
        self.m, self.v = zeros(), zeros()

    def step(self, params, grads):
        c, d = self.c, self.dtype
        lr = d(np.float32(c["learning_rate"]))  # Keras keeps lr in a float32 variable
        name = c["name"]
        for i, (p, g) in enumerate(zip(params, grads)):
            if name == "sgd":
                mu = d(c.get("momentum", 0.0))
                if mu != 0:
                    self.m[i] = mu * self.m[i] - lr * g
                    if c.get("nesterov", False):
                        p += mu * self.m[i] - lr * g
                    else:
                        p += self.m[i]
                else:
                    p -= lr * g
            elif name == "rmsprop":
                assert not c.get("centered", False) and c.get("momentum", 0.0) == 0.0
                rho, eps = d(c["rho"]), d(c["epsilon"])
                self.v[i] = rho * self.v[i] + (1 - rho) * g * g
                p -= lr * g / np.sqrt(self.v[i] + eps)
            elif name == "adam":
                assert not c.get("amsgrad", False)
                b1, b2, eps = d(c["beta_1"]), d(c["beta_2"]), d(c["epsilon"])
                t = d(self.t + 1)
                alpha = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
                self.m[i] += (g - self.m[i]) * (1 - b1)
                self.v[i] += (g * g - self.v[i]) * (1 - b2)
                p -= (self.m[i] * alpha) / (np.sqrt(self.v[i]) + eps)
            else:
                raise ValueError(name)
        self.t += 1


# ---------------------------------------------------------------- replay
def rel_err(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


def replay(spec, dtype):
    d = dtype
    x = np.asarray(spec["x"], dtype=d)
    y = spec["y"]
    y = np.asarray(y, dtype=np.int64 if spec["loss"] == "sparse_categorical_crossentropy" else d)
    bsz, steps = spec["batch_size"], spec["steps"]
    assert (len(x) + bsz - 1) // bsz == steps and len(spec["step_losses"]) == steps
    model = MLP(spec, d)
    opt = Optimizer(spec["optimizer"], model.params, d)

    worst = {"loss": 0.0, "weights": 0.0, "predict": 0.0}
    ok = True
    for i in range(steps):
        xb, yb = x[i * bsz:(i + 1) * bsz], y[i * bsz:(i + 1) * bsz]
        value, grads = model.loss_and_grads(xb, yb, spec["loss"])
        e = rel_err(float(value), spec["step_losses"][i])
        worst["loss"] = max(worst["loss"], e)
        if e > LOSS_RTOL:
            ok = False
            print(f"  step {i}: loss {float(value):.9g} vs golden {spec['step_losses'][i]:.9g} (rel {e:.2e})")
        opt.step(model.params, grads)

    def close(name, got, ref):
        nonlocal ok
        got = np.asarray(got, dtype=np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        assert got.shape == ref.shape, (name, got.shape, ref.shape)
        err = np.abs(got - ref)
        worst[name] = max(worst[name], float((err / (W_ATOL + W_RTOL * np.abs(ref))).max()))
        if not np.all(err <= W_ATOL + W_RTOL * np.abs(ref)):
            ok = False
            print(f"  {name}: max abs diff {err.max():.3e}")

    for p, ref in zip(model.params, spec["final_weights"]):
        assert list(p.shape) == ref["shape"], ref["name"]
        close("weights", p.reshape(-1), ref["values"])
    n_pred = len(spec["predict"])
    close("predict", model.forward(x[:n_pred])[0], spec["predict"])
    return ok, worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    args = ap.parse_args()
    dtype = {"float64": np.float64, "float32": np.float32}[args.dtype]
    files = args.files or sorted(glob.glob(os.path.join(DEFAULT_DIR, "*.json")))
    if not files:
        print("no golden files found")
        return 1
    n_ok = 0
    for path in files:
        with open(path) as fh:
            spec = json.load(fh)
        # float32 round-trip: every recorded number must be exactly a float32
        for e in spec["initial_weights"] + spec["final_weights"]:
            v = np.asarray(e["values"], dtype=np.float64)
            assert np.array_equal(v, v.astype(np.float32).astype(np.float64)), e["name"]
        ok, worst = replay(spec, dtype)
        n_ok += ok
        print(f"{'ok  ' if ok else 'FAIL'} {spec['name']:<24} ({args.dtype}) worst loss rel err "
              f"{worst['loss']:.2e}; weights/predict err in tolerance units "
              f"{worst['weights']:.3f}/{worst['predict']:.3f}")
    print(f"{n_ok} passed, {len(files) - n_ok} failed")
    return 0 if n_ok == len(files) else 1


if __name__ == "__main__":
    sys.exit(main())
