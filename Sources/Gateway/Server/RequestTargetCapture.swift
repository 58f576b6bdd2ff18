/// The first bytes of a request head, kept until the head is decoded, so an answer given before
/// that (431, 408, 400) can still name the sender in its metric. At most `capacity` bytes, in storage
/// allocated once per connection.
struct RequestTargetCapture {
    static let capacity = 128
    private var bytes: [UInt8] = []

    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
    }

    mutating func append<Bytes: Collection<UInt8>>(_ more: Bytes) {
        guard bytes.count < Self.capacity else { return }
        if bytes.capacity < Self.capacity { bytes.reserveCapacity(Self.capacity) }
        bytes.append(contentsOf: more.prefix(Self.capacity - bytes.count))
    }

    /// The path of `METHOD SP path[?query] SP`, once it has arrived whole.
    var path: String? {
        guard let space = bytes.firstIndex(of: UInt8(ascii: " ")) else { return nil }
        let target = bytes[(space + 1)...]
        guard let end = target.firstIndex(where: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "?") }) else { return nil }
        return String(decoding: target[..<end], as: UTF8.self)
    }
}
