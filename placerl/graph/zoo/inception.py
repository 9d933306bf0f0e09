"""Inception-V3 (Szegedy et al. 2016), the torchvision layout without the auxiliary head."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from placerl.graph.zoo.base import ZooModel, register_model

Kernel = int | tuple[int, int]


@dataclass(frozen=True)
class InceptionConfig:
    """Inception-V3 shape.

    Attributes:
        batch: Images per step.
        image_size: Input height and width (at least 75).
        blocks: The mixed blocks in order, as ``(kind, option)``: ``A`` (option: pool-branch
            channels), ``B``, ``C`` (option: channels of the 7x7 factorised branches), ``D``, ``E``.
        num_classes: Outputs of the classifier.
    """

    batch: int = 32
    image_size: int = 299
    blocks: tuple[tuple[str, int], ...] = (
        ("A", 32),
        ("A", 64),
        ("A", 64),
        ("B", 0),
        ("C", 128),
        ("C", 160),
        ("C", 160),
        ("C", 192),
        ("D", 0),
        ("E", 0),
        ("E", 0),
    )
    num_classes: int = 1000


class BasicConv2d(nn.Module):
    """Bias-free convolution, batch norm (eps 1e-3), ReLU."""

    def __init__(self, c_in: int, c_out: int, kernel: Kernel, stride: int = 1, padding=0) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel, stride, padding, bias=False)
        self.bn = nn.BatchNorm2d(c_out, eps=0.001)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.bn(self.conv(x)))


class InceptionA(nn.Module):
    """35x35 block: 1x1, 5x5, double 3x3 and pool branches."""

    def __init__(self, c_in: int, pool_features: int) -> None:
        super().__init__()
        self.branch1x1 = BasicConv2d(c_in, 64, 1)
        self.branch5x5_1 = BasicConv2d(c_in, 48, 1)
        self.branch5x5_2 = BasicConv2d(48, 64, 5, padding=2)
        self.branch3x3dbl_1 = BasicConv2d(c_in, 64, 1)
        self.branch3x3dbl_2 = BasicConv2d(64, 96, 3, padding=1)
        self.branch3x3dbl_3 = BasicConv2d(96, 96, 3, padding=1)
        self.branch_pool = BasicConv2d(c_in, pool_features, 1)
        self.out_channels = 64 + 64 + 96 + pool_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b1 = self.branch1x1(x)
        b5 = self.branch5x5_2(self.branch5x5_1(x))
        b3 = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        bp = self.branch_pool(F.avg_pool2d(x, 3, stride=1, padding=1))
        return torch.cat([b1, b5, b3, bp], 1)


class InceptionB(nn.Module):
    """Grid reduction 35x35 -> 17x17."""

    def __init__(self, c_in: int, _: int = 0) -> None:
        super().__init__()
        self.branch3x3 = BasicConv2d(c_in, 384, 3, stride=2)
        self.branch3x3dbl_1 = BasicConv2d(c_in, 64, 1)
        self.branch3x3dbl_2 = BasicConv2d(64, 96, 3, padding=1)
        self.branch3x3dbl_3 = BasicConv2d(96, 96, 3, stride=2)
        self.out_channels = 384 + 96 + c_in

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b3 = self.branch3x3(x)
        bd = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        return torch.cat([b3, bd, F.max_pool2d(x, 3, stride=2)], 1)


class InceptionC(nn.Module):
    """17x17 block with 7x7 convolutions factorised into 1x7 and 7x1."""

    def __init__(self, c_in: int, c7: int) -> None:
        super().__init__()
        row, col = (1, 7), (7, 1)
        self.branch1x1 = BasicConv2d(c_in, 192, 1)
        self.branch7x7_1 = BasicConv2d(c_in, c7, 1)
        self.branch7x7_2 = BasicConv2d(c7, c7, row, padding=(0, 3))
        self.branch7x7_3 = BasicConv2d(c7, 192, col, padding=(3, 0))
        self.branch7x7dbl_1 = BasicConv2d(c_in, c7, 1)
        self.branch7x7dbl_2 = BasicConv2d(c7, c7, col, padding=(3, 0))
        self.branch7x7dbl_3 = BasicConv2d(c7, c7, row, padding=(0, 3))
        self.branch7x7dbl_4 = BasicConv2d(c7, c7, col, padding=(3, 0))
        self.branch7x7dbl_5 = BasicConv2d(c7, 192, row, padding=(0, 3))
        self.branch_pool = BasicConv2d(c_in, 192, 1)
        self.out_channels = 4 * 192

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b1 = self.branch1x1(x)
        b7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        bd = self.branch7x7dbl_1(x)
        for conv in (self.branch7x7dbl_2, self.branch7x7dbl_3, self.branch7x7dbl_4):
            bd = conv(bd)
        bd = self.branch7x7dbl_5(bd)
        bp = self.branch_pool(F.avg_pool2d(x, 3, stride=1, padding=1))
        return torch.cat([b1, b7, bd, bp], 1)


class InceptionD(nn.Module):
    """Grid reduction 17x17 -> 8x8."""

    def __init__(self, c_in: int, _: int = 0) -> None:
        super().__init__()
        self.branch3x3_1 = BasicConv2d(c_in, 192, 1)
        self.branch3x3_2 = BasicConv2d(192, 320, 3, stride=2)
        self.branch7x7x3_1 = BasicConv2d(c_in, 192, 1)
        self.branch7x7x3_2 = BasicConv2d(192, 192, (1, 7), padding=(0, 3))
        self.branch7x7x3_3 = BasicConv2d(192, 192, (7, 1), padding=(3, 0))
        self.branch7x7x3_4 = BasicConv2d(192, 192, 3, stride=2)
        self.out_channels = 320 + 192 + c_in

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b3 = self.branch3x3_2(self.branch3x3_1(x))
        b7 = self.branch7x7x3_1(x)
        for conv in (self.branch7x7x3_2, self.branch7x7x3_3, self.branch7x7x3_4):
            b7 = conv(b7)
        return torch.cat([b3, b7, F.max_pool2d(x, 3, stride=2)], 1)


class InceptionE(nn.Module):
    """8x8 block with expanded 1x3 / 3x1 filter banks."""

    def __init__(self, c_in: int, _: int = 0) -> None:
        super().__init__()
        self.branch1x1 = BasicConv2d(c_in, 320, 1)
        self.branch3x3_1 = BasicConv2d(c_in, 384, 1)
        self.branch3x3_2a = BasicConv2d(384, 384, (1, 3), padding=(0, 1))
        self.branch3x3_2b = BasicConv2d(384, 384, (3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = BasicConv2d(c_in, 448, 1)
        self.branch3x3dbl_2 = BasicConv2d(448, 384, 3, padding=1)
        self.branch3x3dbl_3a = BasicConv2d(384, 384, (1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = BasicConv2d(384, 384, (3, 1), padding=(1, 0))
        self.branch_pool = BasicConv2d(c_in, 192, 1)
        self.out_channels = 320 + 2 * 384 + 2 * 384 + 192

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b1 = self.branch1x1(x)
        b3 = self.branch3x3_1(x)
        b3 = torch.cat([self.branch3x3_2a(b3), self.branch3x3_2b(b3)], 1)
        bd = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        bd = torch.cat([self.branch3x3dbl_3a(bd), self.branch3x3dbl_3b(bd)], 1)
        bp = self.branch_pool(F.avg_pool2d(x, 3, stride=1, padding=1))
        return torch.cat([b1, b3, bd, bp], 1)


BLOCKS: dict[str, Callable[[int, int], nn.Module]] = {
    "A": InceptionA,
    "B": InceptionB,
    "C": InceptionC,
    "D": InceptionD,
    "E": InceptionE,
}
# The grid size each block kind works at, as in torchvision's names (Mixed_5b, Mixed_6a, ...),
# and the letter its first block takes there.
_GRID = {"A": 5, "B": 6, "C": 6, "D": 7, "E": 7}
_FIRST_LETTER = {5: "b", 6: "a", 7: "a"}


def block_names(kinds: list[str]) -> list[str]:
    """torchvision's names for a sequence of mixed blocks: ``Mixed_5b``, ``Mixed_5c``, ..."""
    names, seen = [], {5: 0, 6: 0, 7: 0}
    for kind in kinds:
        grid = _GRID[kind]
        letter = chr(ord(_FIRST_LETTER[grid]) + seen[grid])
        seen[grid] += 1
        names.append(f"Mixed_{grid}{letter}")
    return names


class InceptionV3(nn.Module):
    """Stem of five convolutions and two max pools, the mixed blocks, pool, dropout, classifier."""

    def __init__(self, config: InceptionConfig) -> None:
        super().__init__()
        self.Conv2d_1a_3x3 = BasicConv2d(3, 32, 3, stride=2)
        self.Conv2d_2a_3x3 = BasicConv2d(32, 32, 3)
        self.Conv2d_2b_3x3 = BasicConv2d(32, 64, 3, padding=1)
        self.maxpool1 = nn.MaxPool2d(3, stride=2)
        self.Conv2d_3b_1x1 = BasicConv2d(64, 80, 1)
        self.Conv2d_4a_3x3 = BasicConv2d(80, 192, 3)
        self.maxpool2 = nn.MaxPool2d(3, stride=2)
        c_in = 192
        self.block_names = block_names([kind for kind, _ in config.blocks])
        for name, (kind, option) in zip(self.block_names, config.blocks, strict=True):
            block = BLOCKS[kind](c_in, option)
            self.add_module(name, block)
            c_in = block.out_channels
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(c_in, config.num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool1(self.Conv2d_2b_3x3(self.Conv2d_2a_3x3(self.Conv2d_1a_3x3(x))))
        x = self.maxpool2(self.Conv2d_4a_3x3(self.Conv2d_3b_1x1(x)))
        for name in self.block_names:
            x = getattr(self, name)(x)
        return self.fc(self.dropout(torch.flatten(self.avgpool(x), 1)))


def image_batch(config: InceptionConfig, device: torch.device | str) -> tuple[torch.Tensor]:
    """A batch of RGB images, ``(batch, 3, image_size, image_size)``."""
    size = config.image_size
    return (torch.randn(config.batch, 3, size, size, device=device),)


register_model(
    ZooModel(
        name="inception_v3",
        build=InceptionV3,
        inputs=image_batch,
        variants={
            "inception_v3": InceptionConfig(),
            "small": InceptionConfig(
                batch=2,
                image_size=75,
                blocks=(("A", 32), ("B", 0), ("C", 64), ("D", 0), ("E", 0)),
                num_classes=10,
            ),
        },
        published_params={"inception_v3": 23_834_568},
        doc="Inception-V3 (Szegedy et al. 2016), torchvision layout without the auxiliary head",
    )
)
