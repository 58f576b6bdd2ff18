/// How far a consumer is behind on one assigned partition, for `tollgate_consumer_lag{topic,partition}`.
public struct PartitionLag: Sendable, Equatable {
    public var topic: String
    public var partition: Int32
    /// The next offset this consumer will return: last returned + 1, or where a seek put it (so a
    /// record held back by pause + seek counts as lag). nil until this consumer has returned a
    /// record from the partition or seeked it.
    public var position: Int64?
    /// The partition's end as of the last fetch response; nil before the first one. It stops
    /// moving while the partition is paused (nothing is fetched).
    public var highWatermark: Int64?
    /// `highWatermark - position` (never negative), nil when either is unknown.
    public var lag: Int64?

    public init(topic: String, partition: Int32, position: Int64?, highWatermark: Int64?) {
        self.topic = topic
        self.partition = partition
        self.position = position
        self.highWatermark = highWatermark
        self.lag = position.flatMap { position in highWatermark.map { max(0, $0 - position) } }
    }
}
