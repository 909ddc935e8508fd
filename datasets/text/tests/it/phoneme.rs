use dv_text::{phoneme_pairs, Phoneme, PhonemePair, Stress, StressedPhoneme};

#[test]
fn inventory_is_39_arpabet_plus_silence() {
    assert_eq!(Phoneme::ALL.len(), 40);
    assert_eq!(Phoneme::COUNT, 40);
    let vowels = Phoneme::ALL.iter().filter(|p| p.is_vowel()).count();
    assert_eq!(vowels, 15, "CMUDict has 15 vowels");
    for (i, p) in Phoneme::ALL.iter().enumerate() {
        assert_eq!(p.index(), i);
        assert_eq!(Phoneme::from_index(i), Some(*p));
        assert_eq!(p.symbol().parse::<Phoneme>().unwrap(), *p);
    }
    assert_eq!(Phoneme::from_index(40), None);
    assert_eq!(Phoneme::Sil.symbol(), "sil");
}

#[test]
fn cmudict_notation_parses_with_stress() {
    let p: StressedPhoneme = "AH0".parse().unwrap();
    assert_eq!(p, StressedPhoneme::new(Phoneme::Ah, Stress::None));
    let p: StressedPhoneme = "EY1".parse().unwrap();
    assert_eq!((p.phoneme, p.stress), (Phoneme::Ey, Stress::Primary));
    let p: StressedPhoneme = "ER2".parse().unwrap();
    assert_eq!(p.stress, Stress::Secondary);
    let p: StressedPhoneme = "HH".parse().unwrap();
    assert_eq!((p.phoneme, p.stress), (Phoneme::Hh, Stress::None));
    assert_eq!(p.to_string(), "HH");
    assert_eq!("OW1".parse::<StressedPhoneme>().unwrap().to_string(), "OW1");
    assert!("XX1".parse::<StressedPhoneme>().is_err());
    assert!("AH7".parse::<StressedPhoneme>().is_err());
    assert!("".parse::<StressedPhoneme>().is_err());
    assert_eq!(Stress::COUNT, 5);
    assert_eq!(Stress::Quaternary.index(), 4);
}

#[test]
fn festival_phones_map_to_the_inventory() {
    assert_eq!(Phoneme::from_festival("pau").unwrap().phoneme, Phoneme::Sil);
    assert_eq!(Phoneme::from_festival("h#").unwrap().phoneme, Phoneme::Sil);
    assert_eq!(Phoneme::from_festival("ax").unwrap().phoneme, Phoneme::Ah);
    assert_eq!(Phoneme::from_festival("hh").unwrap().phoneme, Phoneme::Hh);
    assert!(Phoneme::from_festival("qq").is_err());
}

#[test]
fn phoneme_pairs_follow_the_paper() {
    // Deep Voice §3.2: "sil HH EH L OW sil" → (sil,HH) (HH,EH) (EH,L) (L,OW) (OW,sil).
    let seq: Vec<Phoneme> = "sil HH EH L OW sil".split(' ').map(|s| s.parse().unwrap()).collect();
    let pairs = phoneme_pairs(&seq);
    let shown: Vec<String> = pairs.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["(sil,HH)", "(HH,EH)", "(EH,L)", "(L,OW)", "(OW,sil)"]);
    assert!(phoneme_pairs(&[Phoneme::Sil]).is_empty());
    assert!(phoneme_pairs(&[]).is_empty());
}

#[test]
fn pair_indices_are_a_bijection() {
    let mut seen = vec![false; PhonemePair::COUNT];
    for a in Phoneme::ALL {
        for b in Phoneme::ALL {
            let pair = PhonemePair(a, b);
            let i = pair.index();
            assert!(!seen[i]);
            seen[i] = true;
            assert_eq!(PhonemePair::from_index(i), Some(pair));
        }
    }
    assert!(seen.iter().all(|s| *s));
    assert_eq!(PhonemePair::from_index(1600), None);
}
