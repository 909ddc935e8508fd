//! Finding voices by name on a search path.

use dv_voice::catalog::{is_demo, list, list_default_first, name_and_folder, resolve, resolve_name, valid_name};
use dv_voice::VoiceError;

use crate::package::write_ok;

#[test]
fn names_never_walk_the_file_system() {
    for ok in ["slt", "slt-2026.11", "my_voice", "A1"] {
        assert!(valid_name(ok), "{ok}");
    }
    for bad in ["", ".", "..", ".hidden", "a\\b", "a b", "voice\0", "ü", &"x".repeat(65)] {
        assert!(!valid_name(bad), "{bad:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    write_ok(&dir.path().join("inner"));
    for bad in ["..", "../inner", "/etc", "inner/.."] {
        match resolve_name(bad, &[dir.path().join("inner")]) {
            Err(VoiceError::VoiceName { name }) => assert_eq!(name, bad),
            other => panic!("expected a name error for {bad:?}, got {other:?}"),
        }
    }
    assert_eq!(resolve_name("inner", &[dir.path().to_path_buf()]).unwrap(), dir.path().join("inner"));
}

#[test]
fn first_folder_with_the_name_wins_and_a_miss_lists_the_known_voices() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_ok(&b.path().join("slt"));
    write_ok(&b.path().join("other"));
    std::fs::create_dir_all(a.path().join("empty")).unwrap(); // no config.json: not a voice
    write_ok(&a.path().join("slt"));
    let path = vec![a.path().to_path_buf(), b.path().to_path_buf()];
    assert_eq!(resolve("slt", &path).unwrap(), a.path().join("slt"));
    assert_eq!(resolve("other", &path).unwrap(), b.path().join("other"));
    let names: Vec<String> = list(&path).into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["other", "slt"]);
    assert!(list(&path).iter().all(|e| e.config.is_ok()));
    match resolve("empty", &path) {
        Err(VoiceError::VoiceNotFound { name, known, searched }) => {
            assert_eq!(name, "empty");
            assert_eq!(known, ["other", "slt"]);
            assert_eq!(searched, path);
        }
        other => panic!("expected not found, got {other:?}"),
    }
    // a path is taken as a path
    let p = b.path().join("other");
    assert_eq!(resolve(p.to_str().unwrap(), &[]).unwrap(), p);
}

#[test]
fn a_server_takes_a_package_directory_as_its_name_in_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    write_ok(&dir.path().join("mine"));
    let folder = dir.path().canonicalize().unwrap();
    assert_eq!(name_and_folder("slt").unwrap(), ("slt".to_string(), None));
    let given = format!("{}/mine/", dir.path().display());
    assert_eq!(name_and_folder(&given).unwrap(), ("mine".to_string(), Some(folder.clone())));
    // what the server then finds under that name
    assert_eq!(resolve_name("mine", std::slice::from_ref(&folder)).unwrap(), folder.join("mine"));
    // a directory that holds no package is named with its missing config.json
    std::fs::create_dir_all(dir.path().join("empty")).unwrap();
    let err = name_and_folder(&format!("{}/empty", dir.path().display())).unwrap_err();
    assert!(matches!(err, VoiceError::Io { .. }) && err.to_string().contains("empty/config.json"), "{err}");
    // a directory whose name a request could not give
    write_ok(&dir.path().join("my voice"));
    let err = name_and_folder(&format!("{}/my voice", dir.path().display())).unwrap_err();
    assert!(matches!(err, VoiceError::VoiceName { .. }), "{err}");
}

#[test]
fn a_broken_package_is_listed_with_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let v = dir.path().join("broken");
    std::fs::create_dir_all(&v).unwrap();
    std::fs::write(v.join("config.json"), "{ not json").unwrap();
    let found = list(&[dir.path().to_path_buf()]);
    assert_eq!(found.len(), 1);
    assert!(found[0].config.as_ref().unwrap_err().to_string().contains("config.json"), "{:?}", found[0].config);
}

#[test]
fn demo_voices_are_the_demo_names() {
    assert!(is_demo("demo-tiny") && is_demo("demo-text") && is_demo("demo-tiny-cpu"));
    assert!(!is_demo("slt") && !is_demo("demo") && !is_demo("demo-") && !is_demo("my-demo-voice"));
}

#[test]
fn the_default_voice_is_listed_first_wherever_it_sorts() {
    let d = tempfile::tempdir().unwrap();
    for name in ["alpha", "demo-tiny", "zeta"] {
        write_ok(&d.path().join(name));
    }
    let path = vec![d.path().to_path_buf()];
    let names =
        |default: &str| -> Vec<String> { list_default_first(&path, default).into_iter().map(|e| e.name).collect() };
    assert_eq!(names("zeta"), ["zeta", "alpha", "demo-tiny"]);
    assert_eq!(names("alpha"), ["alpha", "demo-tiny", "zeta"]);
    assert_eq!(names("absent"), ["alpha", "demo-tiny", "zeta"], "a default not on the path changes nothing");
}
