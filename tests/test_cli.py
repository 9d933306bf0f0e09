import subprocess
import sys

from placerl.cli import main


def test_describe_prints_graph_order_and_cluster(capsys):
    assert main(["describe", "msr:bert24_inference", "--order", "bfs", "--cluster", "placeto"]) == 0
    out = capsys.readouterr().out
    assert "bert24_inference: 32 nodes, 55 edges" in out
    assert "order      bfs: node1" in out
    assert "Cluster('placeto', gpux3" in out


def test_describe_reports_bad_input(capsys):
    assert main(["describe", "msr:missing"]) == 2
    assert "error: no msr graph 'missing'" in capsys.readouterr().err


def test_module_entry_point():
    done = subprocess.run(
        [sys.executable, "-m", "placerl", "describe", "msr:bert24_inference"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "32 nodes" in done.stdout
