/* The library's version, as a string ("MAJOR.MINOR.PATCH"). */
#ifndef PACKWIRE_VERSION_H
#define PACKWIRE_VERSION_H

#define PW_VERSION "0.1.0"

#endif
