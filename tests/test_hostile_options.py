"""Settings honoured, refused by name or warned about, never coerced; helpers that keep the types they are given;
outputs that never overwrite an input; refusals made before any row is read, naming the value as written.

Device counts (``use_cpu_cores``, ``JCSOL_CPU_DEVICES`` against ``XLA_FLAGS`` and ``jax_num_cpu_devices``), the
registry's names, ``TableEncoder``'s ``drop=`` and ``positive=``, the types of ``jcsol.datasets``' helpers, the
CSV writer given a generator, and the ``jcsol`` command's outputs and options judged before the data.
"""

import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

import jcsol
from jcsol import TableEncoder, features, report
from jcsol.datasets import add_bias, iter_libsvm_blocks, koil_synthetic, l2_normalize, minmax_scale
from jcsol.stream import SparseRows, check_features

# -- device counts --------------------------------------------------------------------------------------------------


def _python(code: str, **env) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter whose environment sets no device count but ``env``'s; it prints the number of
    CPU devices last."""
    full = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JCSOL_CPU_DEVICES", "JAX_NUM_CPU_DEVICES")}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-W", "always", "-c", code + "\nimport jax; print(len(jax.devices('cpu')))"],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
    )


@pytest.mark.parametrize("n", [0, -1, 2.5, 2.0, True, "2"])
def test_use_cpu_cores_refuses_a_count_it_would_round_or_replace(n):
    before = jax_count_setting()
    with pytest.raises((TypeError, ValueError), match=rf"use_cpu_cores: n must be a whole number >= 1, got {n!r}"):
        jcsol.use_cpu_cores(n)
    assert jax_count_setting() == before


def jax_count_setting():
    import jax

    return jax.config.jax_num_cpu_devices


@pytest.mark.parametrize("written", ["1_0", "+3", "0", "2.5"])
def test_a_device_count_in_the_environment_is_read_as_written_or_refused(written):
    done = _python("import jcsol", JCSOL_CPU_DEVICES=written)
    assert done.returncode != 0
    assert f"JCSOL_CPU_DEVICES must be a whole number >= 1, got {written!r}" in done.stderr


def test_a_device_count_that_loses_to_xla_flags_is_warned_about():
    done = _python("import jcsol", JCSOL_CPU_DEVICES="3", XLA_FLAGS="--xla_force_host_platform_device_count=5")
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == 5  # XLA_FLAGS chose first
    assert "JCSOL_CPU_DEVICES=3 is ignored: XLA_FLAGS sets --xla_force_host_platform_device_count=5" in done.stderr
    same = _python("import jcsol", JCSOL_CPU_DEVICES="5", XLA_FLAGS="--xla_force_host_platform_device_count=5")
    assert int(same.stdout.split()[-1]) == 5
    assert "ignored" not in same.stderr  # the same count: nothing lost


def test_a_device_count_that_loses_to_jax_num_cpu_devices_is_warned_about():
    done = _python("import jcsol", JCSOL_CPU_DEVICES="3", JAX_NUM_CPU_DEVICES="2")
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == 2
    assert "JCSOL_CPU_DEVICES=3 is ignored: jax_num_cpu_devices is 2" in done.stderr


def test_use_cpu_cores_without_a_count_keeps_the_one_the_environment_chose():
    wanted = jcsol.devices.cpu_cores() + 1  # never the default of one device per core
    done = _python("import jcsol; jcsol.use_cpu_cores()", JCSOL_CPU_DEVICES=str(wanted))
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == wanted
    one = _python("import jcsol; jcsol.use_cpu_cores()", JCSOL_CPU_DEVICES="1")
    assert int(one.stdout.split()[-1]) == 1


def test_use_cpu_cores_with_a_count_wins_over_xla_flags_and_says_so():
    done = _python("import jcsol; jcsol.use_cpu_cores(4)", XLA_FLAGS="--xla_force_host_platform_device_count=5")
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == 4
    assert "use_cpu_cores(4) overrides XLA_FLAGS' --xla_force_host_platform_device_count=5" in done.stderr


# -- the registry ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "options", "built"),
    [
        ("ACOG-II", {"diagonal": True}, "ACOG-II-diag"),
        ("CW-CVaR-diag", {"diagonal": False}, "CW-CVaR"),
        ("CW-var-project", {"covariance": "drop"}, "CW-var-drop"),
        ("KOIL-RS++", {"loss": "smooth"}, "KOIL-RS++-smooth"),
    ],
)
def test_by_name_refuses_an_option_that_builds_another_variant(name, options, built):
    with pytest.raises(ValueError, match=re.escape(f"would build {built}, not {name}")):
        jcsol.by_name(name, **options)
    assert jcsol.by_name(built).name == built  # the variant asked for by its own name


def test_by_name_takes_hyperparameters_and_options_that_keep_the_variant():
    learner = jcsol.by_name("ACOG-II", eta=0.5, diagonal=False)
    assert (learner.name, float(learner.eta), learner.diagonal) == ("ACOG-II", 0.5, False)


# -- TableEncoder ---------------------------------------------------------------------------------------------------

RECORDS = [{"amount": float(i), "country": "FR" if i % 3 else "DE", "fraud": i % 2} for i in range(8)]


@pytest.mark.parametrize("declared", [True, False])
def test_a_dropped_column_absent_from_the_table_is_refused_like_any_named_column(declared):
    encoder = TableEncoder(["amount"] if declared else (), drop=["payment_idd"], label="fraud")
    before = encoder.state_dict()
    with pytest.raises(ValueError, match=r"drop names column\(s\) \['payment_idd'\] not in the table"):
        encoder.fit_transform(RECORDS)
    assert all(np.array_equal(v, before[k]) for k, v in encoder.state_dict().items())
    assert (
        encoder.columns == {"amount": "numeric", "payment_idd": "dropped"} if declared else {"payment_idd": "dropped"}
    )
    present = TableEncoder(["amount"], drop=["country"], label="fraud")
    assert present.fit_transform(RECORDS).shape == (8, 2**18)


def test_an_empty_list_of_positive_labels_is_refused_not_read_as_none_positive():
    encoder = TableEncoder(["amount"], label="country")
    with pytest.raises(ValueError, match=r"positive must be a label or a non-empty list of labels, got \[\]"):
        encoder.labels(RECORDS, positive=[])
    assert encoder.labels(RECORDS, positive=["DE"]).tolist() == [1, -1, -1, 1, -1, -1, 1, -1]


def test_a_text_cell_of_a_numeric_csv_column_is_named_not_the_number_before_it(tmp_path):
    path = tmp_path / "pay.csv"
    path.write_text("amount,country,fraud\n1.5,FR,0\n2.5,DE,1\n3.5,FR,0\noops,DE,1\n4.5,FR,0\n")
    message = r"numeric column 'amount' holds the non-numeric value 'oops' at row 3"
    with pytest.raises(ValueError, match=message):
        features.load_table(path, "fraud", numeric=["amount"], categorical=["country"])
    frame = pd.read_csv(path)  # the whole column is text for that one cell
    for table in (frame, frame.to_dict("records")):
        with pytest.raises(ValueError, match=message):
            TableEncoder(["amount"]).fit_transform(table)
    with pytest.raises(TypeError, match=r"X: column 'amount' must hold real numbers; .* 'oops' \(str\) at row 3"):
        check_features(frame[["amount"]])


@pytest.mark.parametrize(
    ("values", "row", "shown"),
    [
        ([1e200, 1.5, 2.5], 0, "1e+200"),  # the first value is the shift: the sums overflow at the 1.5 after it
        ([1.5, 2.5, 1e170, 3.0], 2, "1e+170"),
        ([1e160, 1e160, 1.0], 0, "1e+160"),  # 1e160 − 1e160 is 0: the overflow comes at 1.0
        ([0.0, 1.3e154, 1.0, -1.2e154], 1, "1.3e+154"),  # squares of 1.69e308 and 1.44e308: the sum overflows at row 3
    ],
)
def test_a_value_too_large_to_encode_is_named_not_the_ordinary_value_after_it(values, row, shown):
    encoder = TableEncoder(["amount"])
    for table in ([{"amount": v} for v in values], pd.DataFrame({"amount": values})):
        message = f"'amount' has a value too large to encode at row {row} ({shown})"
        with pytest.raises(ValueError, match=re.escape(message)):
            encoder.fit_transform(table)
        assert (encoder.n_seen == 0).all()


def test_a_value_too_large_for_the_statistics_is_refused_in_the_batch_that_brings_it():
    encoder = TableEncoder(["amount"])
    with pytest.raises(ValueError, match=r"too large to encode at row 0 \(1e\+200\)"):
        encoder.fit_transform([{"amount": 1e200}])  # alone its square is never taken: refused by its size
    encoder.fit_transform([{"amount": 1.0}, {"amount": 2.0}])
    assert encoder.n_seen.tolist() == [2]


# -- jcsol.datasets' helpers keep the types they are given ------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64])
def test_add_bias_keeps_the_integer_indices_it_is_given(dtype):
    rows = SparseRows(np.array([[0, 2], [1, 0]], dtype), np.array([[1.0, 2.0], [3.0, 0.0]], np.float32), 3)
    with_bias = add_bias(rows)
    assert with_bias.indices.dtype == dtype
    assert with_bias.values.dtype == np.float32
    assert with_bias.indices.tolist() == [[0, 2, 3], [1, 0, 3]]
    assert check_features(with_bias).todense().tolist() == [[1.0, 0.0, 2.0, 1.0], [0.0, 3.0, 0.0, 1.0]]


def test_add_bias_widens_indices_only_where_they_cannot_hold_the_new_column():
    rows = SparseRows(np.array([[0, 255]], np.uint8), np.array([[1.0, 2.0]]), 256)
    with_bias = add_bias(rows)
    assert with_bias.indices.dtype == np.uint16  # 256 is beyond uint8
    assert with_bias.indices.tolist() == [[0, 255, 256]]
    signed = add_bias(SparseRows(np.array([[0, 1]], np.int8), np.array([[1.0, 2.0]]), 200))
    assert signed.indices.dtype == np.int16
    assert signed.indices.tolist() == [[0, 1, 200]]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_minmax_scale_keeps_the_float_dtype_it_is_given(dtype):
    X = np.array([[0.0, 10.0, 7.0], [5.0, 20.0, 7.0], [10.0, 30.0, 7.0]], dtype)
    scaled = minmax_scale(X)
    assert scaled.dtype == dtype
    assert scaled.tolist() == [[0.0, 0.0, 0.0], [0.5, 0.5, 0.0], [1.0, 1.0, 0.0]]
    assert minmax_scale(np.array([[1, 3], [3, 3]])).dtype == np.float64


def test_minmax_scale_and_l2_normalize_refuse_what_is_no_rows():
    with pytest.raises(TypeError, match="minmax_scale takes dense"):
        minmax_scale(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="l2_normalize takes"):
        l2_normalize(np.array([3.0, 4.0]))
    with pytest.raises(TypeError, match="l2_normalize takes"):
        l2_normalize(np.array([["a", "b"]]))


def test_l2_normalize_takes_scipy_matrices_and_nested_lists_as_it_promises():
    scipy_sparse = pytest.importorskip("scipy.sparse")
    unit = l2_normalize(scipy_sparse.csr_matrix(np.array([[3.0, 0.0, 4.0], [0.0, 0.0, 0.0]], np.float32)))
    assert isinstance(unit, SparseRows)
    assert unit.values.dtype == np.float32
    np.testing.assert_allclose(unit.todense(), [[0.6, 0.0, 0.8], [0.0, 0.0, 0.0]], rtol=1e-7)
    np.testing.assert_allclose(l2_normalize([[3.0, 4.0]]), [[0.6, 0.8]])


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"dtype": int}, ValueError, "dtype must be float32 or float64, got int64"),
        ({"n_pos": 2.5}, ValueError, "n_pos must be a whole number >= 0, got 2.5"),
        ({"n_neg": True}, ValueError, "n_neg must be a whole number >= 0, got True"),
    ],
)
def test_koil_synthetic_refuses_what_it_would_truncate(kwargs, error, message):
    with pytest.raises(error, match=message):
        koil_synthetic(**{"n_pos": 3, "n_neg": 4, **kwargs})


def test_iter_libsvm_blocks_refuses_a_bad_block_size_at_the_call(tmp_path):
    path = tmp_path / "x.svm"
    path.write_text("1 1:1\n")
    with pytest.raises(ValueError, match="block_rows must be an integer >= 1, got 0"):
        iter_libsvm_blocks(path, block_rows=0)  # no block asked for
    assert list(iter_libsvm_blocks(path, block_rows=1)) == [(1, "1 1:1\n")]


# -- writers --------------------------------------------------------------------------------------------------------


def test_write_csv_writes_every_row_of_a_generator(tmp_path):
    rows = [{"learner": "COG-I", "sum": 0.5}, {"learner": "ACOG-I", "sum": 0.75, "f1": 0.25}]
    report.write_csv((dict(r) for r in rows), tmp_path / "runs.csv")
    assert (tmp_path / "runs.csv").read_text().splitlines() == [
        "learner,sum,f1",
        "COG-I,0.5,",
        "ACOG-I,0.75,0.25",
    ]


@pytest.mark.parametrize("rows", [{"learner": "COG-I"}, "learner", [{"learner": "COG-I"}, ("learner", "x")]])
def test_write_csv_refuses_what_is_no_list_of_records_and_writes_nothing(tmp_path, rows):
    with pytest.raises(TypeError, match="write_csv"):
        report.write_csv(rows, tmp_path / "runs.csv")
    assert list(tmp_path.iterdir()) == []


# -- the command: outputs never overwrite inputs, options judged before the data -------------------------------------


def _table(path):
    rng = np.random.default_rng(0)
    rows = "".join(f"{rng.normal():.3f},{'FR' if i % 3 else 'DE'},{i % 4 == 0:d}\n" for i in range(40))
    path.write_text("amount,country,fraud\n" + rows)
    return path


@pytest.fixture
def reads(monkeypatch):
    """The readers of the command's data, recording each call: a refusal before the data leaves it empty."""
    calls = []
    for module, name in ((features, "load_table"), (features, "read_table"), (jcsol.datasets, "load")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    return calls


def _refused(argv, capsys, reads, message):
    rc, out, err = run_cli(argv, capsys)
    assert rc == 2, err
    assert err.count("\n") == 1, err
    assert err.startswith("jcsol: error: "), err
    assert message in err, err
    assert reads == []  # nothing read before the refusal
    return err


@pytest.mark.parametrize("output", ["--csv", "--json"])
def test_an_output_that_is_the_input_table_is_refused_before_anything_is_read(tmp_path, capsys, reads, output):
    data = _table(tmp_path / "pay.csv")
    before = data.read_bytes()
    for given in (str(data), str(tmp_path / "." / "pay.csv"), str(tmp_path / ".." / tmp_path.name / "pay.csv")):
        argv = ["run", "--data", str(data), "--label", "fraud", "--learner", "COG-I", "--perms", "1", output, given]
        _refused(argv, capsys, reads, f"{output} {given} would overwrite {data}, an input (--data {data})")
    assert data.read_bytes() == before


def test_an_output_that_reaches_the_input_through_a_link_is_refused(tmp_path, capsys, reads):
    data = _table(tmp_path / "pay.csv")
    before = data.read_bytes()
    (tmp_path / "soft.csv").symlink_to(data)
    os.link(data, tmp_path / "hard.csv")
    for link in ("soft.csv", "hard.csv"):
        argv = ["run", "--data", str(data), "--label", "fraud", "--perms", "1", "--csv", str(tmp_path / link)]
        _refused(argv, capsys, reads, "an input (--data")
    assert data.read_bytes() == before


def test_a_libsvm_input_is_never_an_output_either(tmp_path, capsys, reads):
    data = tmp_path / "small.svm"
    data.write_text("1 1:0.5 2:1\n-1 1:1\n-1 2:0.25\n1 1:0.75\n")
    _refused(["run", "--data", str(data), "--perms", "1", "--json", str(data)], capsys, reads, "an input (--data")
    figure = tmp_path / "curves.png"  # a LIBSVM file named like the figure --plot writes
    figure.write_bytes(data.read_bytes())
    argv = ["run", "--data", str(figure), "--perms", "1", "--plot", str(tmp_path / "curves")]
    _refused(argv, capsys, reads, f"--plot {tmp_path / 'curves'} would overwrite {figure}, an input")
    assert figure.read_bytes() == data.read_bytes()


def test_an_input_in_the_data_folder_is_never_an_output(tmp_path, capsys, reads):
    (tmp_path / "w8a.gz").write_bytes(b"")
    argv = ["run", "--data", "w8a", "--data-dir", str(tmp_path), "--perms", "1", "--csv", str(tmp_path / "w8a.gz")]
    _refused(argv, capsys, reads, "an input (--data w8a)")
    argv = ["reproduce", "acog-table2", "--data-dir", str(tmp_path), "--datasets", "a9a"]
    (tmp_path / "a9a.t.gz").write_bytes(b"")
    _refused([*argv, "--json", str(tmp_path / "a9a.t.gz")], capsys, reads, "an input (the dataset a9a of acog-table2)")


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        (
            ["--csv", "{d}/runs.out", "--json", "{d}/runs.out"],
            "--csv {d}/runs.out and --json {d}/runs.out name the same",
        ),
        (
            ["--csv", "{d}/fig.png", "--plot", "{d}/fig"],
            "--csv {d}/fig.png and --plot {d}/fig name the same file {d}/fig.png",
        ),
        (["--json", "{d}/fig.svg", "--plot", "{d}/fig.png"], "name the same file {d}/fig.svg"),
    ],
)
def test_two_outputs_of_one_command_never_write_one_file(tmp_path, capsys, reads, outputs, message):
    pytest.importorskip("matplotlib")
    argv = ["run", "--data", "german", "--perms", "1", *(o.format(d=tmp_path) for o in outputs)]
    _refused(argv, capsys, reads, message.format(d=tmp_path))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--key", "-1"], "--key must be a seed in [0, 2**32), got -1"),
        (["--key", "4294967296"], "--key must be a seed in [0, 2**32), got 4294967296"),
        (["--key", "4294967295", "--rerun"], "--key 4294967295: the re-run's seed, key + 1, is 2**32"),
        (["--grid", "eta=1e-50,1e-60"], "--grid eta=1e-50,1e-60: eta=1e-50 is 0 in float32"),
        (["--grid", "eta=1,3e-46"], "--grid eta=1,3e-46: eta=3e-46 is 0 in float32"),
        (["--grid", "eta=1e-60:1e-50"], "--grid eta=1e-60:1e-50: eta=1e-60 is 0 in float32"),
        (["--grid", "eta=1e39"], "--grid eta=1e39: eta=1e39 is inf in float32"),
        (["--alpha-p", "1e-50"], "--alpha-p 1e-50 is 0 in float32"),
        (["--objective", "cost", "--c-p", "1e-50"], "--c-p 1e-50 is 0 in float32"),
        (["--objective", "cost", "--alpha-p", "0.3"], "--alpha-p is not an option of --objective cost"),
        (["--objective", "cost", "--rho", "laplace"], "--rho is not an option of --objective cost"),
        (["--c-p", "0.5"], "--c-p is not an option of --objective sum"),
        (["--curve-points", "30"], "--curve-points sets the points of --plot's curves"),
        (["--rerun", "--all"], "--rerun re-runs the selected values; --all selects none"),
    ],
)
def test_options_judged_without_the_data_are_refused_before_the_table_is_read(
    tmp_path, capsys, reads, options, message
):
    data = _table(tmp_path / "pay.csv")
    err = _refused(
        ["run", "--data", str(data), "--label", "fraud", "--learner", "COG-I", *options], capsys, reads, message
    )
    assert "array(" not in err


def test_the_same_options_are_refused_before_a_libsvm_file_is_read(capsys, reads):
    _refused(["run", "--data", "german", "--key", "-1"], capsys, reads, "--key must be a seed")
    _refused(["run", "--data", "german", "--grid", "eta=1e-50"], capsys, reads, "eta=1e-50 is 0 in float32")


def test_reproduce_refuses_a_bad_key_before_it_reads_a_dataset(tmp_path, capsys, reads):
    argv = ["reproduce", "acog-table2", "--data-dir", str(tmp_path), "--datasets", "german", "--key", "-1"]
    _refused(argv, capsys, reads, "--key must be a seed in [0, 2**32), got -1")
    last = ["reproduce", "acog-table2", "--data-dir", str(tmp_path), "--datasets", "german", "--key", "4294967295"]
    _refused(last, capsys, reads, "the re-run's seed, key + 1, is 2**32")


@pytest.mark.parametrize(
    ("table", "option", "message"),
    [
        ("acog-table2", ["--folds", "3"], "--folds does not apply to acog-table2, which selects on random"),
        ("acog-table3", ["--perms", "3"], "--perms does not apply to acog-table3, which cross-validates"),
        ("acog-table3", ["--no-rerun"], "--no-rerun does not apply to acog-table3"),
        ("csogd-table2", ["--no-rerun"], "--no-rerun does not apply to csogd-table2"),
    ],
)
def test_reproduce_refuses_an_option_its_table_would_ignore(tmp_path, capsys, reads, table, option, message):
    argv = ["reproduce", table, "--data-dir", str(tmp_path), "--datasets", "german", *option]
    _refused(argv, capsys, reads, message)


def test_a_row_store_with_a_bad_block_size_is_refused_before_its_folder_is_made(tmp_path):
    source = tmp_path / "x.svm"
    source.write_text("1 1:1\n-1 2:1\n")
    target = tmp_path / "new" / "store"
    with pytest.raises(ValueError, match="block_rows must be an integer >= 1, got 0"):
        jcsol.datasets.RowStore.build(source, target, block_rows=0)
    assert not (tmp_path / "new").exists()


# -- yes/no options -------------------------------------------------------------------------------------------------

_ROWS = np.random.default_rng(3).standard_normal((40, 3)).astype(np.float32)
_LABELS = np.where(np.arange(40) % 4 == 0, 1, -1)


def _no_run(monkeypatch):
    """Makes every run of the engine fail the test: a refusal must come before the first."""

    def ran(*args, **kwargs):
        raise AssertionError("a run started before the option was judged")

    monkeypatch.setattr(jcsol.protocols.cost_sensitive, "run", ran)


FLAG_CALLS = {
    "select_and_rerun rerun": (
        "rerun",
        lambda v: jcsol.protocols.select_and_rerun(jcsol.COG(), _ROWS, _LABELS, grid={"eta": [0.1, 1.0]}, rerun=v),
    ),
    "select_and_rerun rerun, no grid": (
        "rerun",
        lambda v: jcsol.protocols.select_and_rerun(jcsol.COG(), _ROWS, _LABELS, grid={}, rerun=v),
    ),
    "offline_vs_laplace rerun": (
        "rerun",
        lambda v: jcsol.protocols.offline_vs_laplace(jcsol.COG(), _ROWS, _LABELS, grid={"eta": [0.1]}, rerun=v),
    ),
    "cross_validate stratify": (
        "stratify",
        lambda v: jcsol.protocols.cross_validate(jcsol.COG(), _ROWS, _LABELS, folds=2, stratify=v),
    ),
    "cv_splits stratify": ("stratify", lambda v: jcsol.protocols.cv_splits(_LABELS, 2, stratify=v)),
    "read_libsvm allow_empty": ("allow_empty", lambda v: jcsol.datasets.read_libsvm(b"", allow_empty=v)),
    "reproduce_table rerun": ("rerun", lambda v: jcsol.papers.reproduce_table("acog-table2", "nowhere", rerun=v)),
    "run record_scores": ("record_scores", lambda v: jcsol.run(jcsol.COG(), _ROWS, _LABELS, record_scores=v)),
    "table bold": ("bold", lambda v: jcsol.table({"a": jcsol.run(jcsol.COG(), _ROWS, _LABELS)}, bold=v)),
}


@pytest.mark.parametrize("value", ["no", 1, None, np.array([True, False])], ids=["text", "one", "None", "array"])
@pytest.mark.parametrize("call", sorted(FLAG_CALLS))
def test_a_yes_no_option_is_a_bool_or_refused_before_any_run(call, value, monkeypatch):
    """``"no"`` and ``1`` once read as true and ``None`` as false: the selection re-run, the folds stratified, an
    empty file accepted."""
    name, make = FLAG_CALLS[call]
    if call != "table bold":
        _no_run(monkeypatch)
    with pytest.raises(TypeError, match=f"^{name} must be True or False, got "):
        make(value)


def test_a_yes_no_option_given_as_a_bool_is_honoured():
    assert len(jcsol.datasets.read_libsvm(b"", allow_empty=np.bool_(True))[1]) == 0
    with pytest.raises(ValueError, match="no examples"):
        jcsol.datasets.read_libsvm(b"", allow_empty=False)
    plain = jcsol.protocols.cv_splits(_LABELS, 4, seed=0, stratify=False)
    dealt = jcsol.protocols.cv_splits(_LABELS, 4, seed=0, stratify=True)
    per_fold = [int(np.sum(_LABELS[rows] > 0)) for rows in dealt.test]
    assert max(per_fold) - min(per_fold) <= 1  # 10 positives dealt to 4 folds: 2 or 3 in each
    assert not all(np.array_equal(a, b) for a, b in zip(plain.test, dealt.test))


def test_the_plots_refuse_a_band_or_legend_that_is_no_bool():
    pytest.importorskip("matplotlib")
    from jcsol import plots

    result = jcsol.run(jcsol.COG(), _ROWS, _LABELS, perms=2, curve_points=4)
    for option in ("band", "legend"):
        with pytest.raises(TypeError, match=f"{option} must be True or False, got 'no'"):
            plots.online_curves({"COG": result}, **{option: "no"})
