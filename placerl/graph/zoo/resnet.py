"""ResNet-50 (He et al. 2016), the torchvision layout: bottlenecks with the stride on the 3x3."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from placerl.graph.zoo.base import ZooModel, register_model


@dataclass(frozen=True)
class ResNetConfig:
    """ResNet shape.

    Attributes:
        batch: Images per step.
        image_size: Input height and width.
        layers: Bottleneck blocks per stage (ResNet-50: 3, 4, 6, 3).
        width: Channels of the first stage's bottleneck (doubles per stage, x4 at the output).
        num_classes: Outputs of the classifier.
    """

    batch: int = 32
    image_size: int = 224
    layers: tuple[int, ...] = (3, 4, 6, 3)
    width: int = 64
    num_classes: int = 1000


def conv_bn(c_in: int, c_out: int, kernel: int, stride: int = 1) -> list[nn.Module]:
    """A bias-free convolution (same padding) and its batch norm."""
    conv = nn.Conv2d(c_in, c_out, kernel, stride, padding=kernel // 2, bias=False)
    return [conv, nn.BatchNorm2d(c_out)]


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (strided), 1x1 expand (x4), plus the identity or a projection."""

    expansion = 4

    def __init__(self, c_in: int, width: int, stride: int) -> None:
        super().__init__()
        c_out = width * self.expansion
        self.conv1, self.bn1 = conv_bn(c_in, width, 1)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv2, self.bn2 = conv_bn(width, width, 3, stride)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv3, self.bn3 = conv_bn(width, c_out, 1)
        projection = stride != 1 or c_in != c_out
        self.downsample = nn.Sequential(*conv_bn(c_in, c_out, 1, stride)) if projection else None
        self.relu3 = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu1(self.bn1(self.conv1(x)))
        out = self.relu2(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu3(out + identity)


class ResNet(nn.Module):
    """Stem (7x7/2 conv, 3x3/2 max pool), four bottleneck stages, global pool, classifier."""

    def __init__(self, config: ResNetConfig) -> None:
        super().__init__()
        self.conv1, self.bn1 = conv_bn(3, config.width, 7, stride=2)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        c_in = config.width
        for stage, blocks in enumerate(config.layers):
            width = config.width * 2**stage
            stride = 1 if stage == 0 else 2
            layer = []
            for i in range(blocks):
                layer.append(Bottleneck(c_in, width, stride if i == 0 else 1))
                c_in = width * Bottleneck.expansion
            self.add_module(f"layer{stage + 1}", nn.Sequential(*layer))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(c_in, config.num_classes)
        self.num_stages = len(config.layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for stage in range(self.num_stages):
            x = getattr(self, f"layer{stage + 1}")(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


def image_batch(config: ResNetConfig, device: torch.device | str) -> tuple[torch.Tensor]:
    """A batch of RGB images, ``(batch, 3, image_size, image_size)``."""
    size = config.image_size
    return (torch.randn(config.batch, 3, size, size, device=device),)


register_model(
    ZooModel(
        name="resnet50",
        build=ResNet,
        inputs=image_batch,
        variants={
            "resnet50": ResNetConfig(),
            "small": ResNetConfig(batch=2, image_size=32, layers=(1, 1), width=8, num_classes=10),
        },
        published_params={"resnet50": 25_557_032},
        doc="ResNet-50 (He et al. 2016), torchvision layout, 224x224 ImageNet",
    )
)
