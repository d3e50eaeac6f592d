package com.taobao.gecko.core.buffer;

/** Stand-in for gecko's IoBuffer: FileMessageSet only builds a network reply head with it, never segment bytes. */
public class IoBuffer {
    private final java.nio.ByteBuffer buf;

    private IoBuffer(int capacity) { this.buf = java.nio.ByteBuffer.allocate(capacity); }

    public static IoBuffer allocate(int capacity) { return new IoBuffer(capacity); }

    public IoBuffer put(byte b) { buf.put(b); return this; }

    public IoBuffer put(byte[] b) { buf.put(b); return this; }

    public IoBuffer flip() { buf.flip(); return this; }
}
