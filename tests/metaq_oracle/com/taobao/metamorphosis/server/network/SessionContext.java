package com.taobao.metamorphosis.server.network;

/** Stand-in: the connection a fetch reply goes to (never called here). */
public interface SessionContext {
    com.taobao.gecko.service.Connection getConnection();
}
