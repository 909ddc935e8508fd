//! An RGB pixel canvas with the few primitives charts need.

/// An 8-bit RGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

/// A white RGB canvas, row-major, top-left origin.
pub struct Canvas {
    pub width: u32,
    pub height: u32,
    pixels: Vec<u8>,
    /// Drawing is limited to `(x0, y0, x1, y1)` inclusive when set.
    pub clip: Option<(u32, u32, u32, u32)>,
}

impl Canvas {
    pub fn new(width: u32, height: u32) -> Canvas {
        Canvas { width, height, pixels: vec![255; width as usize * height as usize * 3], clip: None }
    }

    /// The colour at `(x, y)`.
    pub fn get(&self, x: u32, y: u32) -> Rgb {
        let i = (y as usize * self.width as usize + x as usize) * 3;
        Rgb(self.pixels[i], self.pixels[i + 1], self.pixels[i + 2])
    }

    /// Sets `(x, y)` when it lies on the canvas and inside the clip.
    pub fn set(&mut self, x: i64, y: i64, c: Rgb) {
        if x < 0 || y < 0 || x >= self.width as i64 || y >= self.height as i64 {
            return;
        }
        if let Some((x0, y0, x1, y1)) = self.clip {
            if x < x0 as i64 || x > x1 as i64 || y < y0 as i64 || y > y1 as i64 {
                return;
            }
        }
        let i = (y as usize * self.width as usize + x as usize) * 3;
        self.pixels[i..i + 3].copy_from_slice(&[c.0, c.1, c.2]);
    }

    /// A one-pixel line (DDA over the longer axis).
    pub fn line(&mut self, a: (f64, f64), b: (f64, f64), c: Rgb) {
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let n = dx.abs().max(dy.abs()).ceil().clamp(1.0, 1e6) as i64;
        for k in 0..=n {
            let t = k as f64 / n as f64;
            self.set((a.0 + t * dx).round() as i64, (a.1 + t * dy).round() as i64, c);
        }
    }

    /// A two-pixel line.
    pub fn thick_line(&mut self, a: (f64, f64), b: (f64, f64), c: Rgb) {
        self.line(a, b, c);
        self.line((a.0, a.1 + 1.0), (b.0, b.1 + 1.0), c);
    }

    /// A 2 × 2 dot (a series' first point, or an isolated one).
    pub fn dot(&mut self, p: (f64, f64), c: Rgb) {
        let (x, y) = (p.0.round() as i64, p.1.round() as i64);
        for (ox, oy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
            self.set(x + ox, y + oy, c);
        }
    }

    pub fn fill_rect(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: Rgb) {
        for y in y0..=y1 {
            for x in x0..=x1 {
                self.set(x, y, c);
            }
        }
    }

    pub fn rect_outline(&mut self, x0: u32, y0: u32, x1: u32, y1: u32, c: Rgb) {
        let (x0, y0, x1, y1) = (x0 as f64, y0 as f64, x1 as f64, y1 as f64);
        self.line((x0, y0), (x1, y0), c);
        self.line((x0, y1), (x1, y1), c);
        self.line((x0, y0), (x0, y1), c);
        self.line((x1, y0), (x1, y1), c);
    }

    /// Pixel width of `s` at `scale` (8 × 8 glyphs, printable ASCII; other
    /// characters draw as `?`).
    pub fn text_width(s: &str, scale: u32) -> u32 {
        s.chars().count() as u32 * 8 * scale
    }

    /// Draws `s` with its top-left corner at `(x, y)`.
    pub fn text(&mut self, s: &str, x: i64, y: i64, scale: u32, c: Rgb) {
        let scale = scale.max(1) as i64;
        for (k, ch) in s.chars().enumerate() {
            let code = if ch.is_ascii() && !ch.is_ascii_control() { ch as usize } else { '?' as usize };
            let glyph = font8x8::legacy::BASIC_LEGACY[code];
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..8 {
                    if bits >> col & 1 == 1 {
                        let (gx, gy) = (x + (k as i64 * 8 + col) * scale, y + row as i64 * scale);
                        self.fill_rect(gx, gy, gx + scale - 1, gy + scale - 1, c);
                    }
                }
            }
        }
    }

    /// Draws `s` centred on `x`, top at `y`.
    pub fn text_centered(&mut self, s: &str, x: i64, y: i64, scale: u32, c: Rgb) {
        self.text(s, x - Self::text_width(s, scale) as i64 / 2, y, scale, c);
    }

    /// Encodes the canvas as an 8-bit RGB PNG.
    pub fn to_png(&self) -> Result<Vec<u8>, png::EncodingError> {
        let mut out = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut out, self.width, self.height);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            let mut w = enc.write_header()?;
            w.write_image_data(&self.pixels)?;
        }
        Ok(out)
    }
}
