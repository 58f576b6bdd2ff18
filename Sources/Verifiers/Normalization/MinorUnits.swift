import Events

/// Amounts payment providers send in the currency's minor unit (cents for USD, yen for JPY), and
/// their conversion to the micros of a normalized event's `price`.
public enum MinorUnits {
    /// ISO 4217 currencies whose minor unit is not 1/100. Everything else has two decimals.
    /// (Providers that disagree with ISO for a currency, e.g. ISK or TWD, document it; these follow ISO.)
    static let exponents: [String: Int] = [
        "BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0, "PYG": 0,
        "RWF": 0, "UGX": 0, "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
        "BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
        "CLF": 4, "UYW": 4,
    ]

    /// Decimal digits of the minor unit of `currency` (case-insensitive ISO 4217 code).
    public static func exponent(of currency: String) -> Int { exponents[currency.uppercased()] ?? 2 }

    /// `amount` minor units of `currency` in micros (millionths of the major unit); nil on overflow.
    public static func micros(_ amount: Int64, currency: String) -> Int64? {
        var factor: Int64 = 1
        for _ in 0..<(6 - exponent(of: currency)) { factor *= 10 }
        let (result, overflow) = amount.multipliedReportingOverflow(by: factor)
        return overflow ? nil : result
    }

    /// An amount in micros as the currency is written (`19.99 USD`, `1999 JPY`), exact: digits beyond the
    /// minor unit only where the amount has them (`0.015 USD`). One unit for both sides of a comparison.
    public static func text(micros: Int64, currency: String) -> String {
        let exponent = exponent(of: currency)
        let magnitude = micros.magnitude
        var fraction = String(magnitude % 1_000_000)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.count > exponent, fraction.last == "0" { fraction.removeLast() }
        let number = fraction.isEmpty ? "\(magnitude / 1_000_000)" : "\(magnitude / 1_000_000).\(fraction)"
        return (micros < 0 ? "-" : "") + number + " " + currency.uppercased()
    }

    /// Minor units written as text (`"100"`, a JSON number `100`), as the event's price; nil when the
    /// text is not a plain integer, e.g. the empty string Citcon sends for an amount not yet known.
    public static func price(_ text: String?, currency: String?) -> NormalizedEvent.Price? {
        guard let text, let currency, !currency.isEmpty, let amount = Int64(text), let micros = micros(amount, currency: currency) else {
            return nil
        }
        return NormalizedEvent.Price(amountMicros: micros, currency: currency.uppercased())
    }
}
