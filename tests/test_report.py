"""Tables of jcsol.report (text, Markdown, LaTeX, best value in bold) and every figure type of jcsol.plots."""

import numpy as np
import pytest

import jcsol
from jcsol import protocols


@pytest.fixture(scope="module")
def runs(small):
    X, y = small
    cog = jcsol.run(jcsol.COG(eta=1.0), X, y, perms=3, curve_points=20)
    acog = jcsol.run(jcsol.ACOG(eta=10.0), X, y, perms=3, curve_points=20)
    return {"COG-I": cog, "ACOG-I": acog}


def _cells(text, row):
    return [c for c in text.splitlines()[2 + row].split("  ") if c.strip()]


def test_table_bolds_the_best_mean_of_each_column(runs):
    text = jcsol.table(runs)
    sums = {k: 100 * r.sum.mean() for k, r in runs.items()}
    best = max(sums, key=sums.get)
    worst = min(sums, key=sums.get)
    lines = text.splitlines()
    assert len(lines) == 2 + 2  # no extra lines
    best_line = next(l for l in lines if l.startswith(best))
    worst_line = next(l for l in lines if l.startswith(worst))
    assert f"*{sums[best]:.3f} ± " in best_line
    assert f"*{sums[worst]:.3f}" not in worst_line
    md = jcsol.table(runs, fmt="markdown")
    columns = jcsol.report.default_measures(runs["COG-I"])  # sum, sensitivity, specificity, precision, alerts/catch
    assert md.count("**") == 2 * len(columns) == 2 * 5  # one bold cell a column
    assert f"**{sums[best]:.3f} ±" in md
    plain = jcsol.table(runs, bold=False)
    assert "*" not in plain


def test_table_bolds_the_lowest_cost(small):
    X, y = small
    obj = jcsol.Cost(c_p=0.9, c_n=0.1)
    res = {
        "a": jcsol.run(jcsol.COG(eta=1.0), X, y, perms=2, objective=obj),
        "b": jcsol.run(jcsol.COG(eta=1e-3, loss="II"), X, y, perms=2, objective=obj),
    }
    costs = {k: r.cost.mean() for k, r in res.items()}
    lowest = min(costs, key=costs.get)
    md = jcsol.table(res, measures=["cost"], fmt="markdown")
    row = next(l for l in md.splitlines() if l.startswith(f"| {lowest} "))
    assert f"**{costs[lowest]:.3f}" in row


def test_latex_table_escapes_and_bolds(runs):
    tex = jcsol.table(runs, fmt="latex")
    assert tex.startswith(r"\begin{table}")
    assert r"\end{tabular}" in tex
    assert r"sum (\%)" in tex
    assert r"$\pm$" in tex
    assert "±" not in tex
    assert tex.count(r"\textbf{") == len(jcsol.report.default_measures(runs["COG-I"])) == 5
    assert tex.count(r"\\") == 1 + len(runs)  # header + rows
    with pytest.raises(ValueError, match="fmt"):
        jcsol.table(runs, fmt="html")


def test_table_accepts_a_result_best_and_protocol_outcomes(small, runs):
    X, y = small
    one = runs["COG-I"]
    assert jcsol.table(one).splitlines()[2].startswith("COG-I")
    sel = protocols.select_and_rerun(jcsol.ACOG(), X, y, grid={"eta": [1.0, 10.0]}, perms=2, rerun=False)
    text = jcsol.table({"sel": sel, "best": sel.sweep.best("sum")})
    assert text.count(f"{100 * sel.result.sum.mean():.3f}") == 2
    with pytest.raises(TypeError, match="give a jcsol.Result"):
        jcsol.table({"x": 3})


def test_table_checks_its_measures_and_shows_example_costs(runs):
    with pytest.raises(ValueError, match="unknown measure 'auc'; choose from sum, sensitivity"):
        jcsol.table(runs, measures=["sum", "auc"])
    text = jcsol.table(runs, measures=["example_cost"])
    assert "example cost" in text.splitlines()[0]
    assert f"{runs['COG-I'].mistake_cost.mean():.3f} ± " in text


# -- figures: each type drawn, labelled, saved ------------------------------------------------------------


@pytest.fixture(scope="module")
def mpl():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    return matplotlib


def test_online_curves_figure(mpl, runs, tmp_path):
    from jcsol import plots

    fig = plots.online_curves(runs)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "examples seen"
    assert ax.get_ylabel() == "online sum (%)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(runs)
    x, mean = ax.lines[0].get_data()
    np.testing.assert_array_equal(x, runs["COG-I"].curve_t)
    np.testing.assert_allclose(mean, 100 * np.nanmean(runs["COG-I"].curve_of("sum"), 0))
    assert len(ax.collections) == 2  # one band per learner
    cost = plots.online_curves(runs, "cost").axes[0]
    assert cost.get_ylabel() == "cumulative cost"
    assert cost.lines[0].get_ydata()[-1] == pytest.approx(runs["COG-I"].cost.mean())
    png, svg = plots.save(fig, tmp_path / "sub" / "curves")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert svg.read_text().lstrip().startswith("<?xml")
    with pytest.raises(ValueError, match="curves"):
        plots.online_curves(jcsol.run(jcsol.COG(), *_xy(runs), perms=1))


def _xy(runs):
    X, y = jcsol.datasets.load("german")
    return X[:50], y[:50]


def test_varying_weights_and_sensitivity_figures(mpl, small):
    from jcsol import plots

    X, y = small
    vw = protocols.varying_weights(jcsol.ACOG(eta=10.0), X, y, weights=[0.3, 0.5, 0.7], grid={}, perms=2)
    ax = plots.varying_weights_plot({"ACOG-I": vw}).axes[0]
    assert "alpha_n" in ax.get_xlabel()
    assert ax.get_ylabel() == "sum (%)"
    np.testing.assert_allclose(ax.lines[0].get_ydata(), 100 * vw.mean)
    sens = protocols.sensitivity(jcsol.ACOG(), X, y, axes={"eta": [1.0, 10.0], "gamma": [0.1, 1.0]}, perms=2)
    ax = plots.sensitivity_plot({"ACOG-I": sens}, "gamma").axes[0]
    assert ax.get_xscale() == "log"
    assert "gamma" in ax.get_xlabel()
    assert "eta=" in ax.get_title()
    np.testing.assert_allclose(ax.lines[0].get_ydata(), 100 * sens.curve("gamma")[1])


def test_paired_bar_figures(mpl, small):
    from jcsol import plots

    X, y = small
    onv = {"ACOG-I": protocols.old_vs_new_sigma(X, y, eta=[1.0, 10.0], perms=2)}
    ax = plots.old_vs_new_plot(onv).axes[0]
    heights = [p.get_height() for p in ax.patches]
    np.testing.assert_allclose(
        heights, [100 * onv["ACOG-I"].values["old"].mean(), 100 * onv["ACOG-I"].values["new"].mean()]
    )
    assert ax.get_ylabel().startswith("sum (%)")
    assert len(ax.get_legend().get_texts()) == 2
    ovl = {"COG-I": protocols.offline_vs_laplace(jcsol.COG(), X, y, grid={"eta": [1.0]}, perms=2, rerun=False)}
    ax = plots.offline_vs_laplace_plot(ovl).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["COG-I"]
    assert len(ax.patches) == 2
