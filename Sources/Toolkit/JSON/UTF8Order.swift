/// Orders text by its UTF-8 bytes, the order used wherever sorted keys feed an id or a hash.
/// Swift's `<` on String compares canonically normalized text and is not a total order on text that
/// is not normalized (`"é}"` and `"e\u{301}"` are neither less, greater nor equal), so a sort by it
/// follows the per-process order of a Dictionary; bytes give one order in every process.
public enum UTF8Order {
    public static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }
}
