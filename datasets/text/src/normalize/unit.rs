//! Units of measure after a number: `5 km` → `five kilometers`.

/// Symbols as written (case matters: `mm` is not `Mm`), with the singular
/// and plural they are read as.
const UNITS: &[(&str, &str, &str)] = &[
    ("km/h", "kilometer per hour", "kilometers per hour"),
    ("km", "kilometer", "kilometers"),
    ("cm", "centimeter", "centimeters"),
    ("mm", "millimeter", "millimeters"),
    ("m", "meter", "meters"),
    ("mi", "mile", "miles"),
    ("ft", "foot", "feet"),
    ("yd", "yard", "yards"),
    ("kg", "kilogram", "kilograms"),
    ("mg", "milligram", "milligrams"),
    ("g", "gram", "grams"),
    ("lb", "pound", "pounds"),
    ("lbs", "pounds", "pounds"),
    ("oz", "ounce", "ounces"),
    ("tbsp", "tablespoon", "tablespoons"),
    ("tsp", "teaspoon", "teaspoons"),
    ("ml", "milliliter", "milliliters"),
    ("mL", "milliliter", "milliliters"),
    ("l", "liter", "liters"),
    ("L", "liter", "liters"),
    ("mph", "mile per hour", "miles per hour"),
    ("kph", "kilometer per hour", "kilometers per hour"),
    ("hrs", "hours", "hours"),
    ("hr", "hour", "hours"),
    ("h", "hour", "hours"),
    ("min", "minute", "minutes"),
    ("sec", "second", "seconds"),
    ("ms", "millisecond", "milliseconds"),
    ("KB", "kilobyte", "kilobytes"),
    ("MB", "megabyte", "megabytes"),
    ("GB", "gigabyte", "gigabytes"),
    ("TB", "terabyte", "terabytes"),
    ("Hz", "hertz", "hertz"),
    ("kHz", "kilohertz", "kilohertz"),
    ("MHz", "megahertz", "megahertz"),
    ("GHz", "gigahertz", "gigahertz"),
    ("W", "watt", "watts"),
    ("kW", "kilowatt", "kilowatts"),
    ("kWh", "kilowatt hour", "kilowatt hours"),
    ("V", "volt", "volts"),
    ("USD", "dollar", "dollars"),
    ("EUR", "euro", "euros"),
    ("GBP", "pound", "pounds"),
    ("°C", "degree celsius", "degrees celsius"),
    ("°F", "degree fahrenheit", "degrees fahrenheit"),
    ("°", "degree", "degrees"),
];

/// The unit written at the start of `rest` (then not followed by a letter
/// or digit): its length in characters and its reading, singular when
/// `one`.
pub(super) fn unit_at(rest: &[char], one: bool) -> Option<(usize, &'static str)> {
    UNITS.iter().find_map(|(symbol, singular, plural)| {
        let n = symbol.chars().count();
        let here = rest.get(..n)?;
        let ends = !rest.get(n).is_some_and(|c| c.is_ascii_alphanumeric());
        (here.iter().copied().eq(symbol.chars()) && ends).then_some((n, if one { *singular } else { *plural }))
    })
}

/// A unit after `/` (`$2/lb`, `27 m/s`): its length and the words
/// `per <singular>`.
pub(super) fn per_unit_at(rest: &[char]) -> Option<(usize, String)> {
    if rest.first() != Some(&'/') {
        return None;
    }
    let second = rest.get(1) == Some(&'s') && !rest.get(2).is_some_and(|c| c.is_ascii_alphanumeric());
    let (n, singular) = if second { (1, "second") } else { unit_at(&rest[1..], true)? };
    Some((n + 1, format!("per {singular}")))
}
