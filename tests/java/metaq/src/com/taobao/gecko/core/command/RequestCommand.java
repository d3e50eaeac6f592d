/*
 * (C) 2007-2012 Alibaba Group Holding Limited.
 * 
 * Licensed under the Apache License, Version 2.0 (the "License");
 * you may not use this file except in compliance with the License.
 * You may obtain a copy of the License at
 * 
 *      http://www.apache.org/licenses/LICENSE-2.0
 * 
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 */
package com.taobao.gecko.core.command;

/**
 * 请求命令公共接口
 * 
 * @author boyan
 * 
 * @since 1.0, 2009-12-16 下午05:55:07
 */
public interface RequestCommand extends CommandHeader {

    /**
     * 返回请求的头部，用于保存在callBack中
     * 
     * @return
     */
    public CommandHeader getRequestHeader();
}