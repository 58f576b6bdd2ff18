/// Reads HTTP/1.1 responses off one keep-alive connection, just enough to know where each ends and
/// its status: the status line, `Content-Length` or chunked transfer coding, and `Connection: close`.
struct ResponseParser {
    struct Response {
        var status: Int
        var closes: Bool
        /// The first bytes of the response, head and body, as many as asked for (error reports, /metrics).
        var bytes: [UInt8]
    }

    struct Malformed: Error {}

    private static let versionPrefix = Array("HTTP/1.".utf8)

    private var buffer: [UInt8] = []
    /// How far the search for the end of the head has looked.
    private var scanned = 0

    init() { buffer.reserveCapacity(4_096) }

    mutating func reset() {
        buffer.removeAll(keepingCapacity: true)
        scanned = 0
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer) { buffer.append(contentsOf: bytes) }

    /// The next complete response, removed from the buffer; nil until it has arrived whole.
    mutating func next(keeping keep: Int) throws(Malformed) -> Response? {
        guard let headEnd = findHeadEnd() else { return nil }
        let head = buffer[0..<headEnd]
        guard head.count >= 12, head.starts(with: Self.versionPrefix) else { throw Malformed() }
        var status = 0
        for byte in head[head.startIndex + 9..<head.startIndex + 12] {
            guard byte >= 48, byte <= 57 else { throw Malformed() }
            status = status * 10 + Int(byte - 48)
        }
        var contentLength: Int?
        var chunked = false
        var closes = false
        // Header names compared in place, byte by byte: this runs once per answer, and the
        // client's CPU per request bounds what it can drive.
        var lineStart = head.firstIndex(of: 10).map { $0 + 1 } ?? headEnd
        while lineStart < headEnd {
            let lineEnd = buffer[lineStart..<headEnd].firstIndex(of: 13) ?? headEnd
            if let colon = buffer[lineStart..<lineEnd].firstIndex(of: 58) {
                let name = buffer[lineStart..<colon]
                let value = buffer[(colon + 1)..<lineEnd]
                if Self.matches(name, "content-length") {
                    contentLength = Int(String(decoding: value, as: UTF8.self).trimmingWhitespace)
                } else if Self.matches(name, "transfer-encoding") {
                    chunked = Self.lowercased(value).contains("chunked")
                } else if Self.matches(name, "connection") {
                    closes = Self.lowercased(value).contains("close")
                }
            }
            lineStart = lineEnd + 2
        }
        let bodyStart = headEnd + 4
        let end: Int
        if chunked {
            guard let chunkedEnd = try chunkedBodyEnd(from: bodyStart) else { return nil }
            end = chunkedEnd
        } else {
            // No length and not chunked: 1xx, 204, 304, or a body that lasts until close, which
            // Hummingbird never sends; counted as empty.
            end = bodyStart + (contentLength ?? 0)
            guard buffer.count >= end else { return nil }
        }
        let response = Response(status: status, closes: closes, bytes: keep > 0 ? Array(buffer[0..<min(end, keep)]) : [])
        if end == buffer.count { buffer.removeAll(keepingCapacity: true) } else { buffer.removeFirst(end) }
        scanned = 0
        return response
    }

    private mutating func findHeadEnd() -> Int? {
        let count = buffer.count
        guard count >= 4 else { return nil }
        var index = max(0, scanned - 3)
        while index + 3 < count {
            if buffer[index] == 13, buffer[index + 1] == 10, buffer[index + 2] == 13, buffer[index + 3] == 10 { return index }
            index += 1
        }
        scanned = count
        return nil
    }

    /// Where a chunked body starting at `start` ends (after the last chunk and the empty trailer), or nil if incomplete.
    private func chunkedBodyEnd(from start: Int) throws(Malformed) -> Int? {
        var position = start
        while true {
            guard let lineEnd = lineEnd(from: position) else { return nil }
            let sizeText = String(decoding: buffer[position..<lineEnd].prefix { $0 != 59 }, as: UTF8.self).trimmingWhitespace
            guard let size = Int(sizeText, radix: 16) else { throw Malformed() }
            position = lineEnd + 2
            if size == 0 {
                // Trailer fields, then an empty line.
                while true {
                    guard let end = self.lineEnd(from: position) else { return nil }
                    let empty = end == position
                    position = end + 2
                    if empty { return position }
                }
            }
            position += size + 2
            guard buffer.count >= position else { return nil }
        }
    }

    private func lineEnd(from start: Int) -> Int? {
        var index = start
        while index + 1 < buffer.count {
            if buffer[index] == 13, buffer[index + 1] == 10 { return index }
            index += 1
        }
        return nil
    }

    /// `bytes` equals the lowercase ASCII `name`, ignoring case.
    private static func matches(_ bytes: ArraySlice<UInt8>, _ name: StaticString) -> Bool {
        guard bytes.count == name.utf8CodeUnitCount else { return false }
        return name.withUTF8Buffer { expected in
            zip(bytes, expected).allSatisfy { ($0 >= 65 && $0 <= 90 ? $0 + 32 : $0) == $1 }
        }
    }

    private static func lowercased(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }, as: UTF8.self)
    }
}

extension String {
    var trimmingWhitespace: String {
        let scalars = unicodeScalars.drop { $0 == " " || $0 == "\t" || $0 == "\r" }
        return String(String.UnicodeScalarView(scalars.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed()))
    }
}
