extension StringProtocol {
    /// Byte-for-byte equality. Swift's `==` on strings is Unicode canonical equivalence ("é" precomposed
    /// equals "e" + U+0301), while the store compares bytes: ids that decide who may act for whom (user
    /// ids above all) are compared the way the store keeps them, so two users can never pass as one.
    public func isExactly(_ other: some StringProtocol) -> Bool { utf8.elementsEqual(other.utf8) }
}
