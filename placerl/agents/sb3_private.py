"""Every private member of Stable-Baselines3 and sb3-contrib that placerl relies on, in one list.

SB3 keeps no promise about underscore members (or undocumented attributes such as
``DummyVecEnv.buf_infos``) across releases. placerl overrides or reads a few of them; each is
listed here with the class it belongs to, the file that uses it, why, and what of SB3's own
code the use assumes. ``tests/agents/test_sb3_private.py`` checks every entry against the
installed SB3 and sb3-contrib, so a release that renames or reworks one fails a named test
instead of a training run. pyproject.toml caps both packages at :data:`WRITTEN_AGAINST`.

Importing this module imports neither package; :func:`problems` does.
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from typing import Literal

#: The SB3 and sb3-contrib release the uses below were written against and last checked on.
WRITTEN_FOR = "2.9.2"
#: The range pyproject.toml allows: up to the next major of :data:`WRITTEN_FOR`.
WRITTEN_AGAINST = ">=2.2,<3"
#: The packages whose private members are listed (their distribution names on PyPI).
PACKAGES = {"stable_baselines3": "stable-baselines3", "sb3_contrib": "sb3-contrib"}


@dataclass(frozen=True)
class Private:
    """One private member of an SB3 or sb3-contrib class that placerl uses.

    Attributes:
        owner: The class, as ``module:Class``.
        member: The member's name.
        kind: ``method`` (looked up on the class) or ``attribute`` (an instance attribute:
            assigned as ``self.<member>`` in the source of the class or one of its bases).
        used_in: The placerl files that use it.
        why: What placerl does with it.
        relies_on: ``(method, text)`` pairs: the source of the owner's ``method`` must hold
            ``text``, what placerl's use assumes SB3 does.
        written_against: The package's version range the use was written against.
    """

    owner: str
    member: str
    kind: Literal["method", "attribute"]
    used_in: tuple[str, ...]
    why: str
    relies_on: tuple[tuple[str, str], ...] = ()
    written_against: str = WRITTEN_AGAINST

    @property
    def name(self) -> str:
        """``Class.member``, as tests and messages name the entry."""
        return f"{self.owner.split(':')[1]}.{self.member}"


_MASKABLE = "sb3_contrib.common.maskable.policies:MaskableActorCriticPolicy"
_POLICIES = "stable_baselines3.common.policies"
_CALLBACK = "stable_baselines3.common.callbacks:BaseCallback"
#: BaseCallback's hooks that placerl's callbacks override, with the files that do.
_HOOKS = {
    "step": ("placerl/agents/callbacks.py", "placerl/agents/search.py", "placerl/tracking.py"),
    "training_start": ("placerl/agents/callbacks.py", "placerl/tracking.py"),
    "training_end": ("placerl/agents/callbacks.py",),
    "rollout_start": ("placerl/agents/callbacks.py",),
    "rollout_end": ("placerl/agents/callbacks.py",),
}
#: The algorithms of placerl.agents.factory.ALGORITHMS, whose update counter search reads.
_ALGORITHMS = (
    "sb3_contrib:MaskablePPO",
    "stable_baselines3:PPO",
    "stable_baselines3:A2C",
    "sb3_contrib:RecurrentPPO",
)

PRIVATE_MEMBERS: tuple[Private, ...] = (
    Private(
        _MASKABLE,
        "_build",
        "method",
        ("placerl/agents/head_policy.py",),
        "HeadPolicy._build lets SB3 build its networks, then replaces the action and value "
        "networks with placerl's heads and rebuilds the optimizer; over a grid action space "
        "it swaps the distribution's proba_distribution_net for a placeholder meanwhile",
        relies_on=(
            ("__init__", "self._build("),
            ("_build", "self.action_dist.proba_distribution_net("),
        ),
    ),
    Private(
        f"{_POLICIES}:ActorCriticPolicy",
        "_build",
        "method",
        ("placerl/agents/head_policy.py",),
        "as MaskableActorCriticPolicy._build, for the unmasked DevicePolicy",
        relies_on=(("__init__", "self._build("),),
    ),
    Private(
        f"{_POLICIES}:BaseModel",
        "_get_constructor_parameters",
        "method",
        (
            "placerl/agents/head_policy.py",
            "placerl/agents/attention_heads.py",
            "placerl/agents/fitting.py",
        ),
        "the head policies add their own constructor arguments (head_hidden, ...), so that "
        "a saved policy is rebuilt with them; fit_to_env rebuilds a policy from them for "
        "another padding or device count, as SB3's load rebuilds a saved one",
        relies_on=(
            ("save", "self._get_constructor_parameters()"),
            ("load", 'cls(**saved_variables["data"])'),
        ),
    ),
    Private(
        "stable_baselines3.common.vec_env:DummyVecEnv",
        "buf_infos",
        "attribute",
        ("placerl/agents/vec_env.py",),
        "PlacementVecEnv replaces the list with one whose deep copy is shallow (placerl's "
        "envs return fresh info dicts), which step_wait must keep filling in place",
        relies_on=(
            ("step_wait", "self.buf_infos[env_idx]"),
            ("step_wait", "deepcopy(self.buf_infos)"),
        ),
    ),
    *(
        Private(
            algorithm,
            "_n_updates",
            "attribute",
            ("placerl/agents/search.py",),
            "active search reports the updates it made: the counter over n_epochs (SB3 has "
            "no public count; its logger's train/n_updates goes to the in-memory logger)",
            relies_on=(("train", "self._n_updates += 1"),),
        )
        for algorithm in _ALGORITHMS
    ),
    *(
        Private(
            _CALLBACK,
            f"_on_{hook}",
            "method",
            files,
            f"BaseCallback's documented hook, overridden by placerl's callbacks: on_{hook} "
            "calls it",
            relies_on=((f"on_{hook}", f"self._on_{hook}()"),),
        )
        for hook, files in _HOOKS.items()
    ),
)


def owner_class(private: Private) -> type:
    """The class ``private.owner`` names, imported."""
    module, name = private.owner.split(":")
    return getattr(importlib.import_module(module), name)


def problems(private: Private) -> list[str]:
    """What no longer holds of ``private`` in the installed packages (empty: all holds).

    Raises:
        ImportError: The owner's package is not installed.
    """
    cls = owner_class(private)
    found = []
    if private.kind == "method" and not callable(getattr(cls, private.member, None)):
        found.append(f"{private.name} is no method of {cls.__qualname__}")
    if private.kind == "attribute" and not _assigned(cls, private.member):
        found.append(f"no class of {cls.__qualname__}'s bases assigns self.{private.member}")
    for method, text in private.relies_on:
        function = getattr(cls, method, None)
        if function is None or text not in inspect.getsource(function):
            found.append(f"{cls.__qualname__}.{method} no longer holds {text!r}")
    return found


def _assigned(cls: type, member: str) -> bool:
    """Whether the source of ``cls`` or of a base from :data:`PACKAGES` assigns
    ``self.<member>`` (instance attributes exist only on instances)."""
    pattern = re.compile(rf"self\.{re.escape(member)}\s*(:[^=\n]*)?[+-]?=(?!=)")
    return any(
        pattern.search(inspect.getsource(base))
        for base in cls.__mro__
        if base.__module__.split(".")[0] in PACKAGES
    )
