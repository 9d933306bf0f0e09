"""NASNet-A (Zoph et al. 2018): a stack of the searched normal and reduction cells.

Each cell takes the outputs of the two previous cells, maps both to its filter count (a 1x1
convolution, or a factorised reduction when the older input is twice as large), and combines
them in five blocks of separable convolutions, poolings and identities, with the block wiring
of NASNet-A. A normal cell concatenates its left input and five blocks (6x filters); a
reduction cell halves the grid and concatenates four blocks (4x filters). As in the ImageNet
models, a strided 3x3 convolution and two reduction cells form the stem, then three stages of
``cells_per_stage`` normal cells are separated by reduction cells. The default variant follows
NASNet-A Mobile (4 @ 1056: ``filters = 1056 / 24 = 44``): 5.29M parameters against the published
5.33M; ``large`` (6 @ 4032) has 88.74M against 88.95M. The small gap comes from the stem cells,
which the original wires slightly differently.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from placerl.graph.zoo.base import ZooModel, register_model


@dataclass(frozen=True)
class NASNetConfig:
    """NASNet-A shape.

    Attributes:
        batch: Images per step.
        image_size: Input height and width.
        cells_per_stage: Normal cells per stage (``N`` in NASNet's "N @ filters").
        filters: Filters of the first stage (the penultimate layer has ``24 * filters``).
        stem_filters: Channels of the first convolution.
        num_classes: Outputs of the classifier.
    """

    batch: int = 32
    image_size: int = 224
    cells_per_stage: int = 4
    filters: int = 44
    stem_filters: int = 32
    num_classes: int = 1000


def relu_conv_bn(c_in: int, c_out: int) -> nn.Sequential:
    """ReLU, 1x1 convolution, batch norm: maps a cell input to the cell's filter count."""
    return nn.Sequential(nn.ReLU(), nn.Conv2d(c_in, c_out, 1, bias=False), nn.BatchNorm2d(c_out))


class FactorizedReduce(nn.Module):
    """Halves the grid without losing half the pixels: two strided 1x1 paths, one shifted."""

    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.relu = nn.ReLU()
        self.path1 = nn.Conv2d(c_in, c_out // 2, 1, stride=2, bias=False)
        self.path2 = nn.Conv2d(c_in, c_out - c_out // 2, 1, stride=2, bias=False)
        self.bn = nn.BatchNorm2d(c_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(x)
        shifted = F.pad(x[:, :, 1:, 1:], (0, 1, 0, 1))  # one pixel down and right, same size
        return self.bn(torch.cat([self.path1(x), self.path2(shifted)], 1))


class SeparableConv(nn.Sequential):
    """NASNet's ``separable_KxK_2``: twice (ReLU, depthwise KxK, pointwise 1x1, batch norm)."""

    def __init__(self, channels: int, kernel: int, stride: int = 1) -> None:
        layers: list[nn.Module] = []
        for step in range(2):
            layers += [
                nn.ReLU(),
                nn.Conv2d(
                    channels,
                    channels,
                    kernel,
                    stride if step == 0 else 1,
                    kernel // 2,
                    groups=channels,
                    bias=False,
                ),
                nn.Conv2d(channels, channels, 1, bias=False),
                nn.BatchNorm2d(channels),
            ]
        super().__init__(*layers)


def avg_pool(stride: int = 1) -> nn.AvgPool2d:
    """3x3 average pooling that keeps (stride 1) or halves (stride 2) the grid."""
    return nn.AvgPool2d(3, stride, padding=1, count_include_pad=False)


def max_pool() -> nn.MaxPool2d:
    """3x3 max pooling with stride 2."""
    return nn.MaxPool2d(3, 2, padding=1)


class NormalCell(nn.Module):
    """NASNet-A normal cell: five blocks over the left (older) and right (newer) inputs."""

    def __init__(self, c_left: int, c_right: int, filters: int, reduce_left: bool) -> None:
        super().__init__()
        f = filters
        self.left = FactorizedReduce(c_left, f) if reduce_left else relu_conv_bn(c_left, f)
        self.right = relu_conv_bn(c_right, f)
        self.sep5_right, self.sep3_left = SeparableConv(f, 5), SeparableConv(f, 3)
        self.sep5_left, self.sep3_left2 = SeparableConv(f, 5), SeparableConv(f, 3)
        self.pool_right, self.pool_left, self.pool_left2 = avg_pool(), avg_pool(), avg_pool()
        self.sep3_right = SeparableConv(f, 3)
        self.out_channels = 6 * f

    def forward(self, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        left, right = self.left(left), self.right(right)
        blocks = [
            self.sep5_right(right) + self.sep3_left(left),
            self.sep5_left(left) + self.sep3_left2(left),
            self.pool_right(right) + left,
            self.pool_left(left) + self.pool_left2(left),
            self.sep3_right(right) + right,
        ]
        return torch.cat([left, *blocks], 1)


class ReductionCell(nn.Module):
    """NASNet-A reduction cell: halves the grid; five blocks, four of them concatenated."""

    def __init__(self, c_left: int, c_right: int, filters: int, reduce_left: bool) -> None:
        super().__init__()
        f = filters
        self.left = FactorizedReduce(c_left, f) if reduce_left else relu_conv_bn(c_left, f)
        self.right = relu_conv_bn(c_right, f)
        self.sep5_right, self.sep7_left = SeparableConv(f, 5, 2), SeparableConv(f, 7, 2)
        self.max_right, self.sep7_left2 = max_pool(), SeparableConv(f, 7, 2)
        self.avg_right, self.sep5_left = avg_pool(2), SeparableConv(f, 5, 2)
        self.avg_block0 = avg_pool()
        self.sep3_block0, self.max_right2 = SeparableConv(f, 3), max_pool()
        self.out_channels = 4 * f

    def forward(self, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        left, right = self.left(left), self.right(right)
        block0 = self.sep5_right(right) + self.sep7_left(left)
        block1 = self.max_right(right) + self.sep7_left2(left)
        block2 = self.avg_right(right) + self.sep5_left(left)
        block3 = self.avg_block0(block0) + block1
        block4 = self.sep3_block0(block0) + self.max_right2(right)
        return torch.cat([block1, block2, block3, block4], 1)


class NASNetA(nn.Module):
    """Stem convolution, two stem reduction cells, three stages of cells, classifier."""

    def __init__(self, config: NASNetConfig) -> None:
        super().__init__()
        f = config.filters
        self.conv0 = nn.Sequential(
            nn.Conv2d(3, config.stem_filters, 3, stride=2, bias=False),
            nn.BatchNorm2d(config.stem_filters),
        )
        # (channels, grid level) of the two newest states; a reduction raises the level.
        states = [(config.stem_filters, 0), (config.stem_filters, 0)]
        plan = [("cell_stem_0", ReductionCell, f // 4), ("cell_stem_1", ReductionCell, f // 2)]
        for stage in range(3):
            if stage > 0:
                plan.append((f"reduction_cell_{stage - 1}", ReductionCell, f * 2**stage))
            plan += [
                (f"cell_{stage}_{i}", NormalCell, f * 2**stage)
                for i in range(config.cells_per_stage)
            ]
        self.cell_names = []
        for name, kind, filters in plan:
            (c_left, level_left), (c_right, level_right) = states
            cell = kind(c_left, c_right, filters, reduce_left=level_left < level_right)
            self.add_module(name, cell)
            self.cell_names.append(name)
            level = level_right + (kind is ReductionCell)
            states = [states[1], (cell.out_channels, level)]
        self.relu = nn.ReLU()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(states[1][0], config.num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        left = right = self.conv0(x)
        for name in self.cell_names:
            left, right = right, getattr(self, name)(left, right)
        x = torch.flatten(self.avgpool(self.relu(right)), 1)
        return self.fc(self.dropout(x))


def image_batch(config: NASNetConfig, device: torch.device | str) -> tuple[torch.Tensor]:
    """A batch of RGB images, ``(batch, 3, image_size, image_size)``."""
    size = config.image_size
    return (torch.randn(config.batch, 3, size, size, device=device),)


register_model(
    ZooModel(
        name="nasnet",
        build=NASNetA,
        inputs=image_batch,
        variants={
            "mobile": NASNetConfig(),
            "large": NASNetConfig(image_size=331, cells_per_stage=6, filters=168, stem_filters=96),
            "small": NASNetConfig(
                batch=2, image_size=32, cells_per_stage=1, filters=8, stem_filters=8, num_classes=10
            ),
        },
        published_params={"mobile": 5_326_716, "large": 88_949_818},
        doc="NASNet-A (Zoph et al. 2018) cell stack; default NASNet-A Mobile (4 @ 1056)",
    )
)
