import Events

extension KeyedDecodingContainer {
    /// A `google.protobuf.Timestamp` in Google's JSON mapping: RFC 3339 in UTC with up to nine
    /// fractional digits (`2022-04-22T18:39:58.270Z`). Absent or null is nil; any other text fails
    /// the decoding, so a wrong expiry is never taken for a missing one.
    func decodeTimestampIfPresent(forKey key: Key) throws -> Timestamp? {
        guard let text = try decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let time = Timestamp(rfc3339: text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "not an RFC 3339 timestamp")
        }
        return time
    }

    /// An int64, which Google's JSON mapping writes as a string (`"1700000000000"`); a bare number is accepted too.
    func decodeInt64StringIfPresent(forKey key: Key) throws -> Int64? {
        if let number = try? decodeIfPresent(Int64.self, forKey: key) { return number }
        guard let text = try decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let number = Int64(text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "not an int64 string")
        }
        return number
    }
}
