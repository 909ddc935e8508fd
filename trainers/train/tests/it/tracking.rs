//! The JSONL metrics file: whole lines only, also after a crash mid-line.

use dv_train::Tracker;

#[test]
fn a_partial_last_line_is_cut_and_every_line_parses() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("m.jsonl");
    let p = path.to_str().unwrap();
    // what a run killed while writing its line 3 could leave
    std::fs::write(&path, "{\"step\":1,\"loss\":2.5}\n{\"step\":2,\"loss\":2.0}\n{\"step\":3,\"lo").unwrap();
    let mut t = Tracker::open(Some(p), None).unwrap();
    t.metrics(3, &[("loss", 1.5)]).unwrap();
    t.metrics(4, &[("loss", 1.25)]).unwrap();
    drop(t);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'));
    let steps: Vec<u64> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap_or_else(|e| panic!("{l:?}: {e}"))["step"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(steps, [1, 2, 3, 4]);
    // a file of whole lines is left as it is
    let before = std::fs::read_to_string(&path).unwrap();
    drop(Tracker::open(Some(p), None).unwrap());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    // a file with no newline at all is emptied
    std::fs::write(&path, "{\"ste").unwrap();
    drop(Tracker::open(Some(p), None).unwrap());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
}
