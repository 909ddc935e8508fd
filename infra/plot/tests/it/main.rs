//! Charts are checked by decoding the PNG they produce and looking at the
//! pixels where the data must (and must not) be.

use dv_plot::{plot_area, ticks, Chart, PlotError, Rgb, Scale, Series, PALETTE};

fn decode(png_bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let dec = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

fn pixel(img: &(u32, u32, Vec<u8>), x: u32, y: u32) -> Rgb {
    let i = (y * img.0 + x) as usize * 3;
    Rgb(img.2[i], img.2[i + 1], img.2[i + 2])
}

fn chart(series: Vec<Series>, log_y: bool) -> Chart {
    Chart { title: "loss".into(), x_label: "step".into(), y_label: "loss".into(), log_y, series }
}

#[test]
fn a_flat_series_is_drawn_on_its_row_and_a_nan_leaves_a_gap() {
    // y = 3 everywhere except a NaN in the middle of x = 0..100.
    let points: Vec<(f64, f64)> =
        (0..=100).map(|i| (i as f64, if (45..=55).contains(&i) { f64::NAN } else { 3.0 })).collect();
    let other: Vec<(f64, f64)> = (0..=100).map(|i| (i as f64, 1.0 + i as f64 / 25.0)).collect();
    let c = chart(vec![Series { name: "train".into(), points }, Series { name: "val".into(), points: other }], false);
    let (w, h) = (640, 400);
    let img = decode(&c.render_png(w, h).unwrap());
    assert_eq!((img.0, img.1), (w, h));
    let (xs, ys) = c.scales(w, h).unwrap();
    let row = ys.map(3.0).round() as u32;
    let blue = PALETTE[0];
    // Drawn at x = 10 and 90 on the row of y = 3, absent at x = 50 (NaN).
    for x in [10.0, 90.0] {
        assert_eq!(pixel(&img, xs.map(x).round() as u32, row), blue, "x = {x}");
    }
    let gap = xs.map(50.0).round() as u32;
    assert_ne!(pixel(&img, gap, row), blue);
    // The second series rises through y = 3 at x = 50, inside the first one's gap.
    assert_eq!(pixel(&img, gap, row), PALETTE[1]);
    // Nothing of the series lies outside the plot area.
    let (x0, y0, x1, y1) = plot_area(w, h);
    for y in 0..h {
        for x in 0..w {
            if x < x0 || x > x1 || y < y0 || y > y1 {
                let p = pixel(&img, x, y);
                // The legend is inside; outside only ink (grey/black) and white.
                assert!(p.0 == p.1 && p.1 == p.2, "colour {p:?} outside the plot area at ({x}, {y})");
            }
        }
    }
}

#[test]
fn a_log_axis_spans_whole_decades_and_skips_non_positive_values() {
    let points: Vec<(f64, f64)> = (1..=50).map(|i| (i as f64, 100.0 / i as f64)).chain([(51.0, 0.0)]).collect();
    let c = chart(vec![Series { name: "loss".into(), points }], true);
    let (_, ys) = c.scales(500, 300).unwrap();
    assert_eq!(ys.range(), (1.0, 100.0));
    assert_eq!(ys.ticks(), vec![1.0, 10.0, 100.0]);
    // A decade is the same height wherever it is.
    assert!(((ys.map(1.0) - ys.map(10.0)) - (ys.map(10.0) - ys.map(100.0))).abs() < 1e-9);
    let img = decode(&c.render_png(500, 300).unwrap());
    let (xs, _) = c.scales(500, 300).unwrap();
    assert_eq!(pixel(&img, xs.map(10.0).round() as u32, ys.map(10.0).round() as u32), PALETTE[0]);
}

#[test]
fn nothing_drawable_and_too_small_are_errors() {
    let c = chart(vec![Series { name: "a".into(), points: vec![(0.0, f64::NAN), (1.0, f64::INFINITY)] }], false);
    assert!(matches!(c.render_png(640, 400), Err(PlotError::Empty { log_y: false })));
    let c = chart(vec![Series { name: "a".into(), points: vec![(0.0, -1.0), (1.0, 0.0)] }], true);
    let e = c.render_png(640, 400).unwrap_err();
    assert!(e.to_string().contains("log axis"), "{e}");
    let c = chart(vec![Series { name: "a".into(), points: vec![(0.0, 1.0)] }], false);
    assert!(matches!(c.render_png(50, 50), Err(PlotError::TooSmall { .. })));
    // One point is drawable: the range is widened around it.
    let (_, ys) = c.scales(640, 400).unwrap();
    let (lo, hi) = ys.range();
    assert!(lo < 1.0 && hi > 1.0, "{lo}..{hi}");
}

#[test]
fn linear_ticks_are_round_and_cover_the_data() {
    let s = Scale::linear(0.13, 0.87, 0.0, 100.0);
    let t = s.ticks();
    assert_eq!(s.step(), 0.2);
    assert!(t.first().unwrap() <= &0.13 && t.last().unwrap() >= &0.87, "{t:?}");
    for v in &t {
        assert!((v / 0.2 - (v / 0.2).round()).abs() < 1e-9, "{v}");
    }
    assert_eq!(ticks(0.0, 10.0, 5.0), vec![0.0, 5.0, 10.0]);
    assert_eq!(Scale::linear(-3.0, 47.0, 0.0, 1.0).step(), 10.0);
}

#[test]
fn a_heatmap_maps_low_to_dark_and_high_to_bright_with_markers_on_top() {
    use dv_plot::{viridis, Heatmap, Marker};
    // 4 columns (time), 3 rows: columns 0-1 at 0 dB, columns 2-3 at 10 dB.
    let values: Vec<f32> = (0..4).flat_map(|c| [if c < 2 { 0.0 } else { 10.0 }; 3]).collect();
    let red = Rgb(220, 20, 20);
    let h = Heatmap {
        title: "t".into(),
        x_label: "s".into(),
        y_label: "mel".into(),
        columns: 4,
        rows: 3,
        values,
        x_range: (0.0, 4.0),
        y_range: (0.0, 3.0),
        markers: vec![Marker { x: 3.0, label: "AH".into(), row: 0, colour: red }],
    };
    let (w, ht) = (400, 300);
    let img = decode(&h.render_png(w, ht).unwrap());
    let (x0, _, x1, y1) = plot_area(w, ht);
    let at = |frac: f64| (x0 as f64 + frac * (x1 - x0) as f64) as u32;
    assert_eq!(pixel(&img, at(0.1), y1 - 5), viridis(0.0));
    assert_eq!(pixel(&img, at(0.6), y1 - 5), viridis(1.0));
    assert_eq!(pixel(&img, at(0.75), y1 - 5), red, "the marker at x = 3 of 0..4");
    assert_ne!(viridis(0.0), viridis(1.0));
    let bad = Heatmap { values: vec![0.0; 5], ..h };
    assert!(matches!(bad.render_png(w, ht), Err(PlotError::Shape { columns: 4, rows: 3, values: 5 })));
}

#[test]
fn tick_labels_show_decades_below_one_on_log_axes() {
    let log = dv_plot::Scale::log10(0.05, 20.0, 400.0, 0.0);
    let labels: Vec<String> = log.ticks().iter().map(|&t| log.tick_label(t)).collect();
    assert_eq!(labels, ["0.01", "0.1", "1", "10", "100"]);
    let lin = dv_plot::Scale::linear(0.0, 1.0, 0.0, 100.0);
    let labels: Vec<String> = lin.ticks().iter().map(|&t| lin.tick_label(t)).collect();
    assert_eq!(labels[..3], ["0.0", "0.2", "0.4"]);
}
