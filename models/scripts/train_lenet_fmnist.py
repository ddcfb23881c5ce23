#!/usr/bin/python3
"""Trains LeNet-5 on Fashion-MNIST and exports it to ONNX for the vtpu model zoo.

Run with Debian's interpreter (python3-torch, dataset-fashion-mnist):
    /usr/bin/python3 models/scripts/train_lenet_fmnist.py
It writes models/zoo/lenet5_fmnist.onnx and models/zoo/lenet5_fmnist.json (the measured
fp32 test-set accuracy). Fixed seeds, single thread: the same run gives the same weights.
Inputs are grey images scaled to [0, 1], NCHW [batch, 1, 28, 28].
"""
import gzip
import json
import os
import struct

import numpy as np
import torch
import torch.nn as nn

DATA = "/usr/share/datasets/fashion-mnist"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "zoo")
EPOCHS = 4


def idx(path):
    with gzip.open(path, "rb") as f:
        magic = struct.unpack(">I", f.read(4))[0]
        dims = [struct.unpack(">I", f.read(4))[0] for _ in range(magic & 0xFF)]
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(dims)


def lenet5():
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(400, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, 10))


def main():
    torch.manual_seed(0)
    np.random.seed(0)
    torch.set_num_threads(1)
    x_train = torch.tensor(idx(f"{DATA}/train-images-idx3-ubyte.gz"), dtype=torch.float32).unsqueeze(1) / 255.0
    y_train = torch.tensor(idx(f"{DATA}/train-labels-idx1-ubyte.gz"), dtype=torch.long)
    x_test = torch.tensor(idx(f"{DATA}/t10k-images-idx3-ubyte.gz"), dtype=torch.float32).unsqueeze(1) / 255.0
    y_test = torch.tensor(idx(f"{DATA}/t10k-labels-idx1-ubyte.gz"), dtype=torch.long)

    model = lenet5()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(EPOCHS):
        perm = torch.randperm(len(x_train))
        for i in range(0, len(x_train), 128):
            b = perm[i:i + 128]
            opt.zero_grad()
            loss = loss_fn(model(x_train[b]), y_train[b])
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            acc = (model(x_test).argmax(1) == y_test).float().mean().item()
        model.train()
        print(f"epoch {epoch + 1}: loss {loss.item():.3f}, test accuracy {acc:.4f}")

    model.eval()
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "lenet5_fmnist.onnx")
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), path, opset_version=13, input_names=["image"],
                      output_names=["logits"], dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    with open(os.path.join(OUT, "lenet5_fmnist.json"), "w") as f:
        json.dump({"model": "lenet5_fmnist.onnx", "dataset": "Fashion-MNIST (dataset-fashion-mnist)",
                   "fp32_test_accuracy": round(acc, 4), "test_images": len(x_test), "epochs": EPOCHS,
                   "input": "grey pixels / 255, NCHW [batch, 1, 28, 28]", "seed": 0}, f, indent=2)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes), fp32 test accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
