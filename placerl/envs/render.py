"""Rendering of a placement: a text summary per device, or the graph drawn by device."""

from __future__ import annotations

import numpy as np

from placerl.cluster import Cluster


def render_ansi(case, placement: np.ndarray, cluster: Cluster) -> str:
    """One line per device: nodes, compute seconds, resident memory; then the runtime."""
    placed = placement >= 0
    full = np.where(placed, placement, case.reference_placement)
    result = case.model.evaluate(full, check=False)
    lines = [f"{case.graph.name}: {int(placed.sum())}/{placement.size} nodes placed"]
    for d, device in enumerate(cluster.devices):
        count = int((placement == d).sum())
        lines.append(
            f"  {device.name:<10} {count:>5} nodes  busy {result.busy[d]:.4g} s  "
            f"memory {result.peak_memory[d]:.4g} / {device.memory:.4g} B"
        )
    lines.append(
        f"  runtime {result.runtime:.6g} s ({result.objective}), feasible={result.feasible}"
    )
    return "\n".join(lines) + "\n"


def render_rgb(case, placement: np.ndarray, cluster: Cluster) -> np.ndarray:
    """The graph in topological layers, nodes coloured by device (grey: unplaced), with a
    legend of the devices' colours."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    import networkx as nx
    from matplotlib.patches import Patch

    graph = case.graph
    g = nx.DiGraph()
    g.add_nodes_from(range(graph.num_nodes))
    g.add_edges_from(zip(graph.arrays.src.tolist(), graph.arrays.dst.tolist(), strict=True))
    for layer, nodes in enumerate(nx.topological_generations(g)):
        for v in nodes:
            g.nodes[v]["layer"] = layer
    pos = nx.multipartite_layout(g, subset_key="layer")
    palette = plt.get_cmap("tab10")
    colours = [palette(int(d) % 10) if d >= 0 else (0.7, 0.7, 0.7, 1.0) for d in placement]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=80)
    nx.draw_networkx(
        g, pos, ax=ax, node_color=colours, node_size=40, with_labels=False, arrows=False, width=0.3
    )
    ax.set_title(f"{graph.name} on {cluster.name} ({cluster.num_devices} devices)")
    handles = [
        Patch(color=palette(d % 10), label=device.name) for d, device in enumerate(cluster.devices)
    ]
    ax.legend(
        handles=handles,
        fontsize=6,
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        title="device",
        title_fontsize=6,
        frameon=False,
    )
    ax.axis("off")
    fig.tight_layout()
    fig.canvas.draw()
    image = np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()
    plt.close(fig)
    return image
