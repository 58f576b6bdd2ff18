import Glibc

/// Reads a small file such as those under /proc (whose size reads as 0) with plain `read`.
func readProcFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 8_192)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count <= 0 { break }
        bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

func writeProcFile(_ path: String, _ text: String) -> Bool {
    let fd = open(path, O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == text.utf8.count
}
