/// An `application/x-www-form-urlencoded` body, decoded strictly: bad `%` escapes, invalid UTF-8 and
/// a name given twice are refused rather than guessed at (two parsers could pick different values).
public struct FormBody {
    public let values: [String: String]

    public init?(_ bytes: [UInt8]) {
        var values: [String: String] = [:]
        for pair in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let nameBytes = PercentDecoding.decode(parts[0], plusIsSpace: true),
                  let valueBytes = PercentDecoding.decode(parts.count > 1 ? parts[1] : ArraySlice<UInt8>(), plusIsSpace: true),
                  let name = String(validating: nameBytes, as: UTF8.self),
                  let value = String(validating: valueBytes, as: UTF8.self),
                  !name.isEmpty, values.updateValue(value, forKey: name) == nil else { return nil }
        }
        self.values = values
    }
}
