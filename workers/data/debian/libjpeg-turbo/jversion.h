#define JVERSION "6b  27-Mar-1998"
#define JCOPYRIGHT "Copyright (C) 2022 The libjpeg-turbo Project"
#define JCOPYRIGHT_SHORT "Copyright (C) 2022 The libjpeg-turbo Project and many others"
