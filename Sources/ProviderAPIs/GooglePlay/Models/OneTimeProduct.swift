import Events
import Foundation

/// A one-time product of the Play catalog as `monetization.onetimeproducts.get` answers it
/// (https://developers.google.com/android-publisher/api-ref/rest/v3/monetization.onetimeproducts), read
/// only for what a purchase does not carry: a rental's period. Other fields are ignored.
public struct OneTimeProduct: Decodable, Sendable, Equatable {
    public let productId: String?
    public let purchaseOptions: [PurchaseOption]?

    public struct PurchaseOption: Decodable, Sendable, Equatable {
        public let purchaseOptionId: String?
        public let rentOption: RentOption?
    }

    /// `OneTimeProductRentPurchaseOption`: "the amount of time a user has the entitlement for; starts at
    /// purchase flow completion" (ISO 8601), and how long after starting to consume it before it is revoked.
    public struct RentOption: Decodable, Sendable, Equatable {
        public let rentalPeriod: String?
        public let expirationPeriod: String?
    }

    /// The rental period of the purchase option `id`, in milliseconds from `start`; nil when the option is not
    /// a rental or its period is not an ISO 8601 duration.
    public func rentalEnd(option id: String, from start: Timestamp) -> Timestamp? {
        guard let period = purchaseOptions?.first(where: { $0.purchaseOptionId == id })?.rentOption?.rentalPeriod else { return nil }
        return ISODuration(period)?.adding(to: start)
    }
}

/// An ISO 8601 duration as Google writes periods (`P3D`, `PT48H`, `P1W`, `P1M`): years and months on the
/// UTC Gregorian calendar, the rest exact. Fractions and negative parts are refused.
public struct ISODuration: Sendable, Equatable {
    var years = 0, months = 0, weeks = 0, days = 0, hours = 0, minutes = 0, seconds = 0

    public init?(_ text: String) {
        var utf8 = Substring(text)
        guard utf8.hasPrefix("P"), utf8.count > 1, utf8.count <= 64 else { return nil }
        utf8 = utf8.dropFirst()
        var inTime = false
        var number = ""
        var any = false
        for character in utf8 {
            if character == "T" {
                guard !inTime, number.isEmpty else { return nil }
                inTime = true
                continue
            }
            if character.isASCII, character.isNumber { number.append(character); continue }
            guard let value = Int(number), value <= 100_000 else { return nil }
            number = ""
            any = true
            switch (inTime, character) {
            case (false, "Y"): years = value
            case (false, "M"): months = value
            case (false, "W"): weeks = value
            case (false, "D"): days = value
            case (true, "H"): hours = value
            case (true, "M"): minutes = value
            case (true, "S"): seconds = value
            default: return nil
            }
        }
        guard any, number.isEmpty else { return nil }
    }

    public func adding(to start: Timestamp) -> Timestamp? {
        var calendar = Calendar(identifier: .gregorian)
        guard let utc = TimeZone(identifier: "UTC") else { return nil }
        calendar.timeZone = utc
        let date = Date(timeIntervalSince1970: Double(start.millisecondsSince1970) / 1000)
        guard let monthsLater = calendar.date(byAdding: DateComponents(year: years, month: months), to: date) else { return nil }
        let exactMs = (Int64(weeks) * 7 * 86_400 + Int64(days) * 86_400 + Int64(hours) * 3_600 + Int64(minutes) * 60 + Int64(seconds)) * 1_000
        return Timestamp(millisecondsSince1970: Int64((monthsLater.timeIntervalSince1970 * 1000).rounded()) + exactMs)
    }
}
