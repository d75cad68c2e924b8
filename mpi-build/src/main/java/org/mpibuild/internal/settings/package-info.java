/**
 * Every setting, declared once ({@link CoreSettings}, with the plug-ins' through the SPI), read into one
 * instance's values ({@link Settings}), and the check for misspelt names ({@link SettingNames}).
 */
package org.mpibuild.internal.settings;
