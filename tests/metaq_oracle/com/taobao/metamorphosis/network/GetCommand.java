package com.taobao.metamorphosis.network;

/** Stand-in for the fetch request (FileMessageSet.write's argument; never called here). */
public interface GetCommand {
    int getOpaque();

    String getTopic();

    String getGroup();

    int getPartition();
}
