"""How placerl's heads plug into SB3's actor-critic policies: replaced after ``_build``.

SB3 builds an MLP between the extractor and linear action and value layers. placerl's heads
(device-equivariant, select-then-place, one-shot attention, grouper-placer) read the
extractor's layout themselves, so the shared MLP is fixed to nothing and, once SB3 has built
its networks, :meth:`HeadPolicy._heads` replaces the action and value networks and the
optimizer is rebuilt over the new parameters. A ``MultiDiscrete`` action space whose rows
have equal sizes gets :class:`~placerl.agents.distributions.MaskableGridDistribution`.
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn

from placerl.agents.distributions import grid_distribution
from placerl.agents.extractors.base import PlacementExtractor, check_sizes
from placerl.errors import ConfigError


class HeadPolicy:
    """Mixin, before an SB3 actor-critic policy class, for heads that read the extractor's
    output directly.

    Subclasses name their head (:attr:`head_name`), say whether it needs per-node states
    (:attr:`per_node`) and build ``action_net`` and ``value_net`` in :meth:`_heads`.
    ``head_hidden`` sets the width of their networks.
    """

    #: The head's name in messages (``head=`` of :func:`~placerl.agents.make_agent`).
    head_name: ClassVar[str] = ""
    #: Whether the head reads every node's state (the extractor's ``per_node=True``).
    per_node: ClassVar[bool] = False
    #: Said after "drop net_arch" when ``net_arch`` is given.
    net_arch_hint: ClassVar[str] = ""

    def __init__(self, *args: Any, head_hidden: int = 64, **kwargs: Any) -> None:
        if kwargs.get("net_arch") not in (None, [], {"pi": [], "vf": []}):
            raise ConfigError(
                f"the {self.head_name} head reads the extractor's output "
                f"directly; drop net_arch{self.net_arch_hint}"
            )
        check_sizes(f"the {self.head_name} head", head_hidden=head_hidden)
        kwargs["net_arch"] = {"pi": [], "vf": []}
        self.head_hidden = head_hidden
        super().__init__(*args, **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        # Overrides SB3's private _build, and _get_constructor_parameters below: both listed,
        # with what they assume of SB3, in placerl/agents/sb3_private.py (checked by a test).
        # SB3 first builds a linear layer from the whole latent to every action logit, which
        # _heads replaces: over the per-node latent of a choice per row it is (N * state) x
        # (N * choices), 47 GB on a 1,200-node graph, so it gets a placeholder there. (Other
        # spaces keep SB3's layer: its initialization draws from the seeded generator, which
        # the heads' initial weights, and so every seeded run, depend on.)
        grid = grid_distribution(self.action_space)
        if grid is None or not isinstance(self, MaskableActorCriticPolicy):
            super()._build(lr_schedule)
        else:
            self.action_dist = grid  # one batched categorical, not one per row
            grid.proba_distribution_net = lambda *args, **kwargs: nn.Identity()
            try:
                super()._build(lr_schedule)
            finally:
                del grid.proba_distribution_net  # the distribution's own method again
        extractor = self.features_extractor
        if not isinstance(extractor, PlacementExtractor) or (
            self.per_node and not extractor.node_dim
        ):
            needed = (
                "a placerl extractor built with per_node=True (gnn or lstm)"
                if self.per_node
                else "a placerl extractor (gnn, lstm, mlp)"
            )
            raise ConfigError(
                f"the {self.head_name} head needs {needed}, got {type(extractor).__name__}"
            )
        self._heads(extractor)
        self.optimizer = self.optimizer_class(
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
        )

    def _heads(self, extractor: PlacementExtractor) -> None:
        """Set ``self.action_net`` and ``self.value_net`` (initialized, see :meth:`_gain`)."""
        raise NotImplementedError

    def _gain(self, module: nn.Module, gain: float) -> None:
        """SB3's orthogonal initialization of ``module``'s linear layers, when ``ortho_init``
        (small gains for logits, 1 for the value, sqrt(2) elsewhere)."""
        if self.ortho_init:
            module.apply(partial(self.init_weights, gain=gain))

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data["head_hidden"] = self.head_hidden
        return data
