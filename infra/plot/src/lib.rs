//! Charts drawn to PNG: line charts (loss curves for `dv plot` and the
//! trainer's MLflow artifacts) and heatmaps with labelled markers
//! (spectrograms with phoneme boundaries for `dv align --plot`).
//!
//! # Contract
//!
//! * A [`Chart`] is plain data: a title, axis labels, a linear or
//!   logarithmic y axis, and named [`Series`] of `(x, y)` points.
//!   [`Chart::render_png`] returns the bytes of an 8-bit RGB PNG of the
//!   requested size.
//! * Points that are not finite (and, on a log axis, not positive) are
//!   skipped, not drawn as zero; a chart with no drawable point is an
//!   error ([`PlotError::Empty`]), not a blank picture.
//! * Axis ranges cover every drawable point, with ticks at 1, 2 and 5 × 10^k
//!   (linear) or at powers of ten (log).
//!
//! Why not `plotters`: its text needs system fonts (fontconfig) or a font
//! file registered at run time, and a training node or a CI machine may
//! have neither. Text here is the public-domain 8 × 8 bitmap font of
//! `font8x8`, so a chart renders the same everywhere.
#![forbid(unsafe_code)]

mod axis;
mod canvas;
mod heatmap;

pub use axis::{ticks, Scale};
pub use canvas::{Canvas, Rgb};
pub use heatmap::{viridis, Heatmap, Marker};

/// Errors of chart rendering.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// No series has a point that can be drawn on this chart's axes.
    #[error("nothing to draw: no series has a finite point{}", if *.log_y { " with y > 0 (log axis)" } else { "" })]
    Empty { log_y: bool },
    /// The picture is too small to hold the axes and labels.
    #[error("a {width} x {height} picture is too small (at least {min_width} x {min_height})")]
    TooSmall { width: u32, height: u32, min_width: u32, min_height: u32 },
    /// A heatmap's values do not fill its columns × rows.
    #[error("a {columns} x {rows} heatmap needs {} values, got {values}", columns * rows)]
    Shape { columns: usize, rows: usize, values: usize },
    /// PNG encoding failed.
    #[error("PNG encoding: {0}")]
    Encode(#[from] png::EncodingError),
}

/// One named line.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A line chart.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// A base-10 logarithmic y axis (loss curves spanning decades).
    pub log_y: bool,
    pub series: Vec<Series>,
}

/// Line colours, in series order (then repeated).
pub const PALETTE: [Rgb; 6] =
    [Rgb(31, 119, 180), Rgb(255, 127, 14), Rgb(44, 160, 44), Rgb(214, 39, 40), Rgb(148, 103, 189), Rgb(140, 86, 75)];

const MARGIN_LEFT: u32 = 84;
const MARGIN_RIGHT: u32 = 16;
const MARGIN_TOP: u32 = 34;
const MARGIN_BOTTOM: u32 = 48;
const GRID: Rgb = Rgb(225, 225, 225);
const INK: Rgb = Rgb(40, 40, 40);

/// A `(low, high)` data range.
pub type Range = (f64, f64);

/// The plot area of a `width` × `height` picture: `(x0, y0, x1, y1)`, pixels.
pub fn plot_area(width: u32, height: u32) -> (u32, u32, u32, u32) {
    (MARGIN_LEFT, MARGIN_TOP, width - MARGIN_RIGHT, height - MARGIN_BOTTOM)
}

impl Chart {
    fn drawable(&self, p: (f64, f64)) -> bool {
        p.0.is_finite() && p.1.is_finite() && (!self.log_y || p.1 > 0.0)
    }

    /// The x and y ranges of the drawable points.
    pub fn bounds(&self) -> Result<(Range, Range), PlotError> {
        let mut it = self.series.iter().flat_map(|s| s.points.iter().copied()).filter(|&p| self.drawable(p));
        let first = it.next().ok_or(PlotError::Empty { log_y: self.log_y })?;
        let (mut x, mut y) = ((first.0, first.0), (first.1, first.1));
        for (px, py) in it {
            x = (x.0.min(px), x.1.max(px));
            y = (y.0.min(py), y.1.max(py));
        }
        Ok((x, y))
    }

    /// The axes this chart is drawn on, in a `width` × `height` picture.
    pub fn scales(&self, width: u32, height: u32) -> Result<(Scale, Scale), PlotError> {
        let (min_width, min_height) = (MARGIN_LEFT + MARGIN_RIGHT + 64, MARGIN_TOP + MARGIN_BOTTOM + 48);
        if width < min_width || height < min_height {
            return Err(PlotError::TooSmall { width, height, min_width, min_height });
        }
        let ((x0, x1), (y0, y1)) = self.bounds()?;
        let (px0, py0, px1, py1) = plot_area(width, height);
        let xs = Scale::linear(x0, x1, px0 as f64, px1 as f64);
        let ys = if self.log_y {
            Scale::log10(y0, y1, py1 as f64, py0 as f64)
        } else {
            Scale::linear(y0, y1, py1 as f64, py0 as f64)
        };
        Ok((xs, ys))
    }

    /// Draws the chart and encodes it as PNG.
    pub fn render_png(&self, width: u32, height: u32) -> Result<Vec<u8>, PlotError> {
        Ok(self.render(width, height)?.to_png()?)
    }

    /// Draws the chart on a white canvas.
    pub fn render(&self, width: u32, height: u32) -> Result<Canvas, PlotError> {
        let (xs, ys) = self.scales(width, height)?;
        let (px0, py0, px1, py1) = plot_area(width, height);
        let mut c = Canvas::new(width, height);
        // Grid and tick labels.
        for t in xs.ticks() {
            let x = xs.map(t).round() as i64;
            c.line((x as f64, py0 as f64), (x as f64, py1 as f64), GRID);
            let label = xs.tick_label(t);
            c.text_centered(&label, x, py1 as i64 + 6, 1, INK);
        }
        for t in ys.ticks() {
            let y = ys.map(t).round() as i64;
            c.line((px0 as f64, y as f64), (px1 as f64, y as f64), GRID);
            let label = ys.tick_label(t);
            let w = Canvas::text_width(&label, 1) as i64;
            c.text(&label, px0 as i64 - 6 - w, y - 4, 1, INK);
        }
        // Frame.
        c.rect_outline(px0, py0, px1, py1, INK);
        // Titles.
        c.text_centered(&self.title, width as i64 / 2, 10, 2, INK);
        c.text_centered(&self.x_label, (px0 + px1) as i64 / 2, height as i64 - 18, 1, INK);
        c.text(&self.y_label, 6, py0 as i64 - 14, 1, INK);
        // Lines, clipped to the plot area.
        c.clip = Some((px0, py0, px1, py1));
        for (k, s) in self.series.iter().enumerate() {
            let colour = PALETTE[k % PALETTE.len()];
            let mut prev: Option<(f64, f64)> = None;
            for &p in &s.points {
                if !self.drawable(p) {
                    prev = None;
                    continue;
                }
                let q = (xs.map(p.0), ys.map(p.1));
                match prev {
                    Some(a) => c.thick_line(a, q, colour),
                    None => c.dot(q, colour),
                }
                prev = Some(q);
            }
        }
        c.clip = None;
        // Legend, top right inside the plot area.
        if self.series.len() > 1 || self.series.first().is_some_and(|s| !s.name.is_empty()) {
            for (k, s) in self.series.iter().enumerate() {
                let colour = PALETTE[k % PALETTE.len()];
                let w = Canvas::text_width(&s.name, 1) as i64;
                let (x, y) = (px1 as i64 - 12 - w, py0 as i64 + 8 + 14 * k as i64);
                c.fill_rect(x - 24, y + 2, x - 6, y + 5, colour);
                c.text(&s.name, x, y, 1, INK);
            }
        }
        Ok(c)
    }
}
