use dv_corpus::{parse_est_f0, parse_xwaves_lab, write_est_f0, write_xwaves_lab, F0Track, PhoneSpan};

#[test]
fn xwaves_labels_round_trip() {
    let spans = vec![
        PhoneSpan { phone: "sil".into(), start: 0.0, end: 0.165 },
        PhoneSpan { phone: "HH".into(), start: 0.165, end: 0.255 },
        PhoneSpan { phone: "AH".into(), start: 0.255, end: 0.285 },
    ];
    let text = write_xwaves_lab(&spans);
    assert_eq!(text, "#\n0.165000 125 pau\n0.255000 125 hh\n0.285000 125 ah\n");
    assert_eq!(parse_xwaves_lab(&text).unwrap(), spans);
}

#[test]
fn xwaves_labels_reject_bad_input() {
    assert!(parse_xwaves_lab("0.1 125 pau\n").unwrap_err().to_string().contains("header"));
    assert!(parse_xwaves_lab("#\n").unwrap_err().to_string().contains("no segments"));
    assert!(parse_xwaves_lab("#\nabc 125 pau\n").unwrap_err().to_string().contains("bad time"));
    assert!(parse_xwaves_lab("#\n0.1 125 zz\n").unwrap_err().to_string().contains("zz"));
    assert!(parse_xwaves_lab("#\n0.1 125\n").is_err());
    assert!(parse_xwaves_lab("#\nNaN 125 pau\n").is_err());
}

#[test]
fn est_f0_round_trips_and_checks_its_grid() {
    let t = F0Track { start: 0.0025, step: 0.005, hz: vec![0.0, 180.25, 181.5, 0.0] };
    let back = parse_est_f0(&write_est_f0(&t)).unwrap();
    assert_eq!(back.hz, t.hz);
    assert!((back.start - t.start).abs() < 1e-9 && (back.step - t.step).abs() < 1e-9);
    assert!(parse_est_f0("not a track").is_err());
    assert!(parse_est_f0("EST_File Track\nDataType binary\nEST_Header_End\n").unwrap_err().to_string().contains("ascii"));
    let uneven = "EST_File Track\nDataType ascii\nEST_Header_End\n0.0 1 100\n0.005 1 100\n0.02 1 100\n";
    assert!(parse_est_f0(uneven).unwrap_err().to_string().contains("equally"));
    let negative = "EST_File Track\nDataType ascii\nEST_Header_End\n0.0 1 100\n0.005 1 -3\n";
    assert!(parse_est_f0(negative).is_err());
}
