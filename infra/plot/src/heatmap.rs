//! A matrix drawn as colours (spectrograms), with labelled vertical markers
//! (phoneme boundaries).

use crate::axis::Scale;
use crate::canvas::{Canvas, Rgb};
use crate::{plot_area, PlotError};

/// A labelled vertical line at data position `x`.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub x: f64,
    pub label: String,
    /// Which row of labels above the plot (0 or 1), so that neighbours do
    /// not overprint.
    pub row: u8,
    pub colour: Rgb,
}

/// `values[c * rows + r]`: column `c` (x, e.g. a time frame) and row `r`
/// (y, e.g. a mel band, drawn bottom to top). Columns span `x_range`, rows
/// span `y_range`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Heatmap {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub columns: usize,
    pub rows: usize,
    pub values: Vec<f32>,
    pub x_range: (f64, f64),
    pub y_range: (f64, f64),
    pub markers: Vec<Marker>,
}

/// Viridis at five stops, linearly interpolated; `t` in `[0, 1]`.
pub fn viridis(t: f64) -> Rgb {
    const STOPS: [(f64, f64, f64); 5] =
        [(68.0, 1.0, 84.0), (59.0, 82.0, 139.0), (33.0, 145.0, 140.0), (94.0, 201.0, 98.0), (253.0, 231.0, 37.0)];
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 } * 4.0;
    let k = (t.floor() as usize).min(3);
    let f = t - k as f64;
    let (a, b) = (STOPS[k], STOPS[k + 1]);
    let mix = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    Rgb(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

const INK: Rgb = Rgb(40, 40, 40);

impl Heatmap {
    /// Draws the matrix, axes and markers and encodes the picture as PNG.
    pub fn render_png(&self, width: u32, height: u32) -> Result<Vec<u8>, PlotError> {
        Ok(self.render(width, height)?.to_png()?)
    }

    /// Draws on a white canvas. The colour scale runs from the smallest to
    /// the largest finite value.
    pub fn render(&self, width: u32, height: u32) -> Result<Canvas, PlotError> {
        let (min_width, min_height) = (200, 160);
        if width < min_width || height < min_height {
            return Err(PlotError::TooSmall { width, height, min_width, min_height });
        }
        if self.columns == 0 || self.rows == 0 || self.values.len() != self.columns * self.rows {
            return Err(PlotError::Shape { columns: self.columns, rows: self.rows, values: self.values.len() });
        }
        let finite = || self.values.iter().copied().filter(|v| v.is_finite());
        let lo = finite().fold(f32::INFINITY, f32::min);
        let hi = finite().fold(f32::NEG_INFINITY, f32::max);
        if !lo.is_finite() {
            return Err(PlotError::Empty { log_y: false });
        }
        let span = if hi > lo { (hi - lo) as f64 } else { 1.0 };
        // Leave room above the plot for two rows of marker labels.
        let (px0, py0, px1, py1) = plot_area(width, height);
        let py0 = py0 + 20;
        let mut c = Canvas::new(width, height);
        let (w, h) = ((px1 - px0) as usize, (py1 - py0) as usize);
        for py in 0..h {
            let r = ((h - 1 - py) * self.rows) / h; // bottom row at the bottom
            for px in 0..w {
                let col = (px * self.columns) / w;
                let v = self.values[col * self.rows + r];
                c.set((px0 as usize + px) as i64, (py0 as usize + py) as i64, viridis((v - lo) as f64 / span));
            }
        }
        let xs = Scale::linear(self.x_range.0, self.x_range.1, px0 as f64, px1 as f64);
        // Ticks inside the data range only (the matrix fills the plot area).
        let to_px = |v: f64| px0 as f64 + (v - self.x_range.0) / (self.x_range.1 - self.x_range.0) * w as f64;
        for t in xs.ticks().into_iter().filter(|t| *t >= self.x_range.0 && *t <= self.x_range.1) {
            let x = to_px(t).round() as i64;
            c.line((x as f64, py1 as f64), (x as f64, py1 as f64 + 4.0), INK);
            c.text_centered(&xs.tick_label(t), x, py1 as i64 + 8, 1, INK);
        }
        let ys = Scale::linear(self.y_range.0, self.y_range.1, py1 as f64, py0 as f64);
        let to_py = |v: f64| py1 as f64 - (v - self.y_range.0) / (self.y_range.1 - self.y_range.0) * h as f64;
        for t in ys.ticks().into_iter().filter(|t| *t >= self.y_range.0 && *t <= self.y_range.1) {
            let y = to_py(t).round() as i64;
            let text = ys.tick_label(t);
            c.text(&text, px0 as i64 - 8 - Canvas::text_width(&text, 1) as i64, y - 4, 1, INK);
        }
        c.rect_outline(px0, py0, px1, py1, INK);
        c.text_centered(&self.title, width as i64 / 2, 6, 2, INK);
        c.text_centered(&self.x_label, (px0 + px1) as i64 / 2, height as i64 - 18, 1, INK);
        c.text(&self.y_label, 6, py0 as i64 - 14, 1, INK);
        for m in &self.markers {
            if !(m.x >= self.x_range.0 && m.x <= self.x_range.1) {
                continue;
            }
            let x = to_px(m.x);
            c.line((x, py0 as f64), (x, py1 as f64), m.colour);
            let y = py0 as i64 - 11 - 10 * m.row.min(1) as i64;
            c.text_centered(&m.label, x.round() as i64, y, 1, m.colour);
        }
        Ok(c)
    }
}
