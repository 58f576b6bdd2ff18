import Events
import Rejections

/// A time taken from a delivery: one the event's RFC 3339 fields can hold (years 0000-9999 in UTC),
/// or a rejection naming the field. Text that is not RFC 3339 at all stays each sender's business
/// (most ignore it, as they did before this check).
enum EventTime {
    static func milliseconds(_ milliseconds: Int64, field: String) throws(Rejection) -> Timestamp {
        guard let time = Timestamp(representableMillisecondsSince1970: milliseconds) else { throw outside(field) }
        return time
    }

    /// Nil when `text` is not RFC 3339; a rejection when it is, but outside years 0000-9999.
    static func rfc3339(_ text: String, field: String) throws(Rejection) -> Timestamp? {
        switch Timestamp.parse(rfc3339: text) {
        case .success(let time): return time
        case .failure(.malformed): return nil
        case .failure(.outsideYears): throw outside(field)
        }
    }

    static let outsideMessage = "is outside years 0000-9999"

    private static func outside(_ field: String) -> Rejection {
        Rejection(.invalidField, "\(field) \(outsideMessage)")
    }
}
