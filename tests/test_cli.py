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


def test_describe_takes_cluster_specs_with_options(capsys):
    assert main(["describe", "synthetic:layered?n=50", "--cluster", "homogeneous?n_devices=4"]) == 0
    out = capsys.readouterr().out
    assert "Cluster('homogeneous', gpux4" in out and out.count("kind=gpu") == 4


def test_describe_prints_msr_times_in_the_files_unit(capsys):
    assert main(["describe", "msr:bert24_inference"]) == 0
    out = capsys.readouterr().out
    assert "total 92.406 msr time units" in out and " s," not in out
    main(["describe", "synthetic:chain?n=4"])
    assert " s, max " in capsys.readouterr().out


def test_describe_reports_bad_cluster_options(capsys):
    assert main(["describe", "synthetic:chain?n=4", "--cluster", "homogeneous?n_devices=x"]) == 2
    assert "option 'n_devices' of cluster preset 'homogeneous'" in capsys.readouterr().err
