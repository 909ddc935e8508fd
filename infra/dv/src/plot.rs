//! `dv plot`: training curves from a tracking JSONL file, drawn to PNG.

use std::path::Path;

use anyhow::{bail, Context};
use clap::Args;
use dv_plot::Chart;

#[derive(Args)]
pub(crate) struct PlotArgs {
    /// A tracking JSONL file (`[tracking] jsonl` of a run config).
    metrics: String,
    /// The PNG to write.
    #[arg(long, default_value = "loss.png")]
    out: String,
    /// Metrics to draw (repeat the flag); default: `loss` and `val_loss`.
    #[arg(long = "metric")]
    metrics_wanted: Vec<String>,
    /// Logarithmic y axis (default: when the values span more than a decade).
    #[arg(long)]
    log_y: Option<bool>,
    /// Chart title (default: the file name).
    #[arg(long)]
    title: Option<String>,
    /// Picture size in pixels, WIDTHxHEIGHT.
    #[arg(long, default_value = "800x480")]
    size: String,
}

/// The picture size `dv plot` draws by default (`--size 800x480`).
pub(crate) const SIZE: (u32, u32) = (800, 480);

pub(crate) fn run(a: PlotArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&a.metrics).with_context(|| format!("reading {}", a.metrics))?;
    let size = a
        .size
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse::<u32>().ok()?, h.parse::<u32>().ok()?)))
        .with_context(|| format!("--size {:?}: expected WIDTHxHEIGHT, e.g. 800x480", a.size))?;
    let title = a.title.clone().unwrap_or_else(|| {
        std::path::Path::new(&a.metrics).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default()
    });
    let mut chart: Chart = dv_train::loss_chart(&text, &title);
    if !a.metrics_wanted.is_empty() {
        let wanted: Vec<&str> = a.metrics_wanted.iter().map(String::as_str).collect();
        let (series, _) = dv_train::curves(&text, &wanted);
        chart.series = series;
        chart.y_label = wanted.join(", ");
        let ys: Vec<f64> = chart.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).collect();
        let (lo, hi) =
            (ys.iter().copied().fold(f64::INFINITY, f64::min), ys.iter().copied().fold(f64::NEG_INFINITY, f64::max));
        chart.log_y = lo > 0.0 && hi / lo > 10.0;
    }
    if let Some(l) = a.log_y {
        chart.log_y = l;
    }
    draw(&chart, &a.metrics, &text, Path::new(&a.out), size)
}

/// Draws `chart`, made from the tracking file `metrics` whose contents are
/// `text`, to the PNG `out` at `(width, height)` pixels, and prints what it
/// drew (and how many lines of `text` it skipped), as `dv plot` does.
pub(crate) fn draw(chart: &Chart, metrics: &str, text: &str, out: &Path, (w, h): (u32, u32)) -> anyhow::Result<()> {
    let (_, bad) = dv_train::curves(text, &[]);
    if chart.series.is_empty() {
        bail!("{metrics}: none of the metrics asked for appears in the file");
    }
    let png = chart.render_png(w, h).with_context(|| format!("drawing {metrics}"))?;
    crate::write_atomic(out, &png)?;
    let points: usize = chart.series.iter().map(|s| s.points.len()).sum();
    let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
    println!("wrote {} ({} x {}): {} points of {}", out.display(), w, h, points, names.join(", "));
    if bad > 0 {
        eprintln!("{metrics}: skipped {bad} line(s) that are not JSON objects with a step");
    }
    Ok(())
}
