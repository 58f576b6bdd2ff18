import Testing
import Verifiers

@Suite("Minor units: amounts as the currency writes them")
struct MinorUnitsTests {
    @Test("micros are written in the currency's major unit, exactly: the minor unit's digits, more only where the amount has them")
    func text() {
        #expect(MinorUnits.text(micros: 19_990_000, currency: "usd") == "19.99 USD")
        #expect(MinorUnits.text(micros: 10_000, currency: "USD") == "0.01 USD")
        #expect(MinorUnits.text(micros: 15_000, currency: "USD") == "0.015 USD")
        #expect(MinorUnits.text(micros: 1_999_000_000, currency: "JPY") == "1999 JPY")
        #expect(MinorUnits.text(micros: 1_500_000, currency: "JPY") == "1.5 JPY")
        #expect(MinorUnits.text(micros: 1_234_000, currency: "KWD") == "1.234 KWD")
        #expect(MinorUnits.text(micros: -2_500_000, currency: "EUR") == "-2.50 EUR")
        #expect(MinorUnits.text(micros: Int64.min, currency: "USD") == "-9223372036854.775808 USD")
        for (minor, currency) in [(Int64(1999), "USD"), (1999, "JPY"), (1234, "KWD")] {
            let micros = MinorUnits.micros(minor, currency: currency) ?? 0
            #expect(MinorUnits.text(micros: micros, currency: currency).hasSuffix(currency))
        }
    }
}
