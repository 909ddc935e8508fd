use dv_align::{AlignError, Interval, TextGrid, PHONES_TIER};

fn iv(xmin: f64, xmax: f64, text: &str) -> Interval {
    Interval { xmin, xmax, text: text.to_owned() }
}

#[test]
fn writes_praat_long_format() {
    let g = TextGrid::from_phones(&[("sil", 0.0, 0.25), ("HH", 0.25, 0.5)], 0.75).unwrap();
    let want = "File type = \"ooTextFile\"
Object class = \"TextGrid\"

xmin = 0 
xmax = 0.75 
tiers? <exists> 
size = 1 
item []: 
    item [1]:
        class = \"IntervalTier\" 
        name = \"phones\" 
        xmin = 0 
        xmax = 0.75 
        intervals: size = 3 
        intervals [1]:
            xmin = 0 
            xmax = 0.25 
            text = \"sil\" 
        intervals [2]:
            xmin = 0.25 
            xmax = 0.5 
            text = \"HH\" 
        intervals [3]:
            xmin = 0.5 
            xmax = 0.75 
            text = \"\" 
";
    assert_eq!(g.to_long_text().unwrap(), want);
}

#[test]
fn round_trip_keeps_times_and_labels_exactly() {
    // Times that are not short decimals, a gap, quotes and non-ASCII labels.
    let phones = [
        ("sil", 0.0, 0.1 + 0.2),
        ("HH", 0.1 + 0.2, 1.0 / 3.0),
        ("a \"quoted\" é", 0.4, 0.7000000000000001),
        ("", 0.7000000000000001, 0.9),
        ("ʃ", 0.9, 1.234567890123),
    ];
    let duration = 2.0 / 1.5;
    let g = TextGrid::from_phones(&phones, duration).unwrap();
    let tier = g.tier(PHONES_TIER).unwrap();
    // The gap between 1/3 and 0.4 and the tail after the last phone are empty intervals.
    let want = [
        iv(0.0, 0.1 + 0.2, "sil"),
        iv(0.1 + 0.2, 1.0 / 3.0, "HH"),
        iv(1.0 / 3.0, 0.4, ""),
        iv(0.4, 0.7000000000000001, "a \"quoted\" é"),
        iv(0.7000000000000001, 0.9, ""),
        iv(0.9, 1.234567890123, "ʃ"),
        iv(1.234567890123, duration, ""),
    ];
    assert_eq!(tier.intervals, want);
    assert_eq!((g.xmin, g.xmax, tier.xmin, tier.xmax), (0.0, duration, 0.0, duration));

    let text = g.to_long_text().unwrap();
    assert!(text.contains("text = \"a \"\"quoted\"\" é\" \n"), "{text}");
    let back = TextGrid::parse(&text).unwrap();
    assert_eq!(back, g);
    for (a, b) in back.tiers[0].intervals.iter().zip(&g.tiers[0].intervals) {
        assert_eq!((a.xmin.to_bits(), a.xmax.to_bits()), (b.xmin.to_bits(), b.xmax.to_bits()));
    }
}

/// What Praat 6 and MFA write: long format, two interval tiers, Praat's
/// 17-digit times, plus a point tier that is read and dropped.
const PRAAT: &str = "File type = \"ooTextFile\"
Object class = \"TextGrid\"

xmin = 0 
xmax = 1.2300000000000002 
tiers? <exists> 
size = 3 
item []: 
    item [1]:
        class = \"IntervalTier\" 
        name = \"words\" 
        xmin = 0 
        xmax = 1.2300000000000002 
        intervals: size = 2 
        intervals [1]:
            xmin = 0 
            xmax = 0.5 
            text = \"\" 
        intervals [2]:
            xmin = 0.5 
            xmax = 1.2300000000000002 
            text = \"hello\" 
    item [2]:
        class = \"TextTier\" 
        name = \"events\" 
        xmin = 0 
        xmax = 1.2300000000000002 
        points: size = 1 
        points [1]:
            number = 0.61 
            mark = \"click\" 
    item [3]:
        class = \"IntervalTier\" 
        name = \"phones\" 
        xmin = 0 
        xmax = 1.2300000000000002 
        intervals: size = 4 
        intervals [1]:
            xmin = 0 
            xmax = 0.5 
            text = \"\" 
        intervals [2]:
            xmin = 0.5 
            xmax = 0.62 
            text = \"HH\" 
        intervals [3]:
            xmin = 0.62 
            xmax = 0.80000000000000004 
            text = \"AH0\" 
        intervals [4]:
            xmin = 0.80000000000000004 
            xmax = 1.2300000000000002 
            text = \"L OW1\" 
";

#[test]
fn parses_a_praat_long_textgrid() {
    let g = TextGrid::parse(PRAAT).unwrap();
    assert_eq!((g.xmin, g.xmax), (0.0, 1.2300000000000002));
    let names: Vec<&str> = g.tiers.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["words", "phones"]);
    assert_eq!(g.tier("words").unwrap().intervals, [iv(0.0, 0.5, ""), iv(0.5, 1.2300000000000002, "hello")]);
    let phones = &g.tier("phones").unwrap().intervals;
    assert_eq!(
        phones,
        &[iv(0.0, 0.5, ""), iv(0.5, 0.62, "HH"), iv(0.62, 0.8, "AH0"), iv(0.8, 1.2300000000000002, "L OW1")]
    );
    // What we parse we can write back and read again unchanged.
    assert_eq!(TextGrid::parse(&g.to_long_text().unwrap()).unwrap(), g);
}

#[test]
fn parses_the_short_format_with_a_bom_and_comments() {
    let short = "\u{feff}File type = \"ooTextFile\"
Object class = \"TextGrid\"

0
1.5
<exists>
1
\"IntervalTier\"
\"phones\" ! a comment with \"quotes\" and 99
0
1.5
2
0
0.7
\"sil\"
0.7
1.5
\"AA\"
";
    let g = TextGrid::parse(short).unwrap();
    assert_eq!(g.tiers.len(), 1);
    assert_eq!(g.tiers[0].name, "phones");
    assert_eq!(g.tiers[0].intervals, [iv(0.0, 0.7, "sil"), iv(0.7, 1.5, "AA")]);
}

#[test]
fn bad_grids_are_typed_errors() {
    let overlap = TextGrid::from_phones(&[("a", 0.0, 0.5), ("b", 0.4, 0.6)], 1.0);
    assert!(matches!(overlap, Err(AlignError::InvalidInterval { tier: 0, index: 1, .. })));
    let past_end = TextGrid::from_phones(&[("a", 0.0, 1.5)], 1.0);
    assert!(matches!(past_end, Err(AlignError::InvalidInterval { index: 0, .. })));
    let empty = TextGrid::from_phones(&[("a", 0.2, 0.2)], 1.0);
    assert!(matches!(empty, Err(AlignError::InvalidInterval { index: 0, .. })));
    let nan = TextGrid::from_phones(&[("a", 0.0, f64::NAN)], 1.0);
    assert!(matches!(nan, Err(AlignError::InvalidInterval { index: 0, .. })));
    assert!(matches!(TextGrid::from_phones::<&str>(&[], 0.0), Err(AlignError::InvalidValue { .. })));

    // A hand-built grid with a gap cannot be written.
    let mut g = TextGrid::from_phones(&[("a", 0.0, 0.5), ("b", 0.5, 1.0)], 1.0).unwrap();
    g.tiers[0].intervals[1].xmin = 0.6;
    assert!(matches!(g.to_long_text(), Err(AlignError::InvalidInterval { tier: 0, index: 1, .. })));

    // A number where the label should be, on line 18 of PRAAT.
    let mut lines: Vec<&str> = PRAAT.lines().collect();
    lines[17] = "            text = 3";
    let e = TextGrid::parse(&lines.join("\n")).unwrap_err();
    assert_eq!(e, AlignError::TextGridSyntax { line: 18, expected: "an interval label", found: "the number 3".into() });
    // Truncated, an unterminated string, trailing values, other classes.
    let cut = &PRAAT[..PRAAT.find("item [3]").unwrap()];
    assert!(matches!(TextGrid::parse(cut), Err(AlignError::TextGridSyntax { expected: "a tier class", .. })));
    assert!(matches!(
        TextGrid::parse("File type = \"ooTextFile"),
        Err(AlignError::TextGridSyntax { expected: "a closing quote", .. })
    ));
    let extra = format!("{PRAAT}\"more\"\n");
    assert!(matches!(TextGrid::parse(&extra), Err(AlignError::TextGridSyntax { expected: "the end of the text", .. })));
    let pitch = PRAAT.replace("\"TextGrid\"", "\"Pitch\"");
    assert!(matches!(TextGrid::parse(&pitch), Err(AlignError::Unsupported { .. })));
    let bad_number = PRAAT.replace("xmax = 0.62", "xmax = 0.6.2");
    assert!(matches!(
        TextGrid::parse(&bad_number),
        Err(AlignError::TextGridSyntax { expected: "a finite number", .. })
    ));
    let reversed = PRAAT.replace("xmax = 0.62", "xmax = 0.42");
    assert!(matches!(TextGrid::parse(&reversed), Err(AlignError::InvalidInterval { tier: 2, index: 1, .. })));
}
